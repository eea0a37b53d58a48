//! Where data lives: a local path or a remote URL.

use std::fmt;
use std::path::PathBuf;

use url::Url;

use crate::error::StorageError;

/// The kind of store behind a remote URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `s3://bucket/key`, `s3a://`, or an `https://` URL on an S3 or R2 host.
    S3,
    /// `gs://bucket/key`.
    Gcs,
    /// `az://container/key`, `abfs(s)://`, `azure://`, or an Azure blob host.
    Azure,
    /// Any other `http://` or `https://` URL: ranged GETs, no listing.
    Http,
}

/// A parsed remote location: the URL, its store and the key inside the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RemoteUrl {
    url: Url,
    scheme: Scheme,
    key: String,
}

impl RemoteUrl {
    /// The full URL as given (normalised by the URL parser).
    pub fn url(&self) -> &Url {
        &self.url
    }
    /// The store kind.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }
    /// The object key (or prefix) inside the store, without a leading `/`.
    pub fn key(&self) -> &str {
        &self.key
    }
    /// The URL of the store's root: `s3://bucket`, `http://host:port`. Stores are shared per
    /// root (and options).
    pub fn root(&self) -> String {
        let origin = &self.url[..url::Position::BeforePath];
        let segments = self
            .url
            .path_segments()
            .map_or(0, |s| s.filter(|s| !s.is_empty()).count());
        let key_segments = self.key.split('/').filter(|s| !s.is_empty()).count();
        if self.scheme == Scheme::Http || segments == key_segments {
            // s3://bucket, gs://bucket, az://container, a virtual-hosted bucket, or an HTTP
            // origin (object_store's HTTP store addresses paths from the origin).
            return origin.to_string();
        }
        // Path-style URLs of S3, R2 and Azure hosts carry the bucket as the first segment.
        let bucket = self
            .url
            .path_segments()
            .and_then(|mut s| s.next())
            .unwrap_or("");
        format!("{origin}/{bucket}")
    }
    /// The URL of `key` in the same store.
    pub fn with_key(&self, key: &str) -> RemoteUrl {
        let root = self.root();
        let url = Url::parse(&format!("{root}/{key}")).unwrap_or_else(|_| self.url.clone());
        RemoteUrl {
            url,
            scheme: self.scheme,
            key: key.to_string(),
        }
    }
}

impl fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.url.as_str())
    }
}

/// A dataset path or URL, as a user gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// A bare path or a `file://` URL: read with the local file system, as before.
    Local(PathBuf),
    /// An object in a remote store.
    Remote(RemoteUrl),
}

impl Location {
    /// Parses `s`: no scheme or `file://` is local; `s3`, `gs`, `az` and `http(s)` are remote.
    pub fn parse(s: &str) -> Result<Location, StorageError> {
        if !looks_like_url(s) {
            return Ok(Location::Local(PathBuf::from(s)));
        }
        let bad = |reason: String| StorageError::BadUrl {
            url: s.to_string(),
            reason,
        };
        let url = Url::parse(s).map_err(|e| bad(e.to_string()))?;
        if url.scheme() == "file" {
            let path = url
                .to_file_path()
                .map_err(|()| bad("not a local file path".into()))?;
            return Ok(Location::Local(path));
        }
        let (scheme, key) = object_store::ObjectStoreScheme::parse(&url)
            .map_err(|e| bad(e.to_string()))
            .and_then(|(scheme, path)| {
                Ok((
                    scheme_of(scheme).ok_or_else(|| bad("unsupported scheme".into()))?,
                    path,
                ))
            })?;
        Ok(Location::Remote(RemoteUrl {
            url,
            scheme,
            key: key.as_ref().to_string(),
        }))
    }

    /// Whether this is a remote location.
    pub fn is_remote(&self) -> bool {
        matches!(self, Location::Remote(_))
    }
}

/// Whether `s` is a URL rather than a path: `scheme://` with a scheme of letters.
pub fn looks_like_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '.' || c == '-')
    })
}

fn scheme_of(scheme: object_store::ObjectStoreScheme) -> Option<Scheme> {
    use object_store::ObjectStoreScheme as S;
    match scheme {
        S::AmazonS3 => Some(Scheme::S3),
        S::GoogleCloudStorage => Some(Scheme::Gcs),
        S::MicrosoftAzure => Some(Scheme::Azure),
        S::Http => Some(Scheme::Http),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(s: &str) -> RemoteUrl {
        match Location::parse(s) {
            Ok(Location::Remote(r)) => r,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn paths_and_file_urls_are_local() {
        assert_eq!(
            Location::parse("a/b.mp4").ok(),
            Some(Location::Local("a/b.mp4".into()))
        );
        assert_eq!(
            Location::parse("/x/y").ok(),
            Some(Location::Local("/x/y".into()))
        );
        assert_eq!(
            Location::parse("file:///x/y%20z").ok(),
            Some(Location::Local("/x/y z".into()))
        );
    }

    #[test]
    fn remote_schemes_give_store_and_key() {
        let s3 = remote("s3://bucket/train/a.jpg");
        assert_eq!(
            (s3.scheme(), s3.key(), s3.root().as_str()),
            (Scheme::S3, "train/a.jpg", "s3://bucket")
        );
        let http = remote("http://127.0.0.1:8080/media/v.mp4");
        assert_eq!((http.scheme(), http.key()), (Scheme::Http, "media/v.mp4"));
        assert_eq!(http.root(), "http://127.0.0.1:8080");
        assert_eq!(remote("gs://b/k").scheme(), Scheme::Gcs);
        assert_eq!(remote("az://c/k").scheme(), Scheme::Azure);
        assert_eq!(
            s3.with_key("train/b.jpg").to_string(),
            "s3://bucket/train/b.jpg"
        );
    }

    #[test]
    fn unknown_schemes_are_errors_naming_the_url() {
        let err = Location::parse("ftp://host/x").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("ftp://host/x")));
    }
}
