//! object_store clients for a URL: the environment first, then gm's timeouts, then the user's
//! keys. (`object_store::parse_url_opts` starts from empty builders and never reads the
//! environment.)

use std::sync::Arc;
use std::time::Duration;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::{BackoffConfig, RetryConfig};

use crate::error::StorageError;
use crate::location::{RemoteUrl, Scheme};
use crate::options::StorageOptions;

/// Applies `(key, value)` pairs to a builder whose keys parse from strings.
macro_rules! configure {
    ($builder:expr, $pairs:expr, $root:expr) => {{
        let mut builder = $builder;
        for (key, value) in $pairs {
            let parsed = key
                .to_ascii_lowercase()
                .parse()
                .map_err(|e| StorageError::Config {
                    url: $root.clone(),
                    reason: format!("option {key:?}: {e}"),
                })?;
            builder = builder.with_config(parsed, value.clone());
        }
        builder
    }};
}

/// Builds the client for `url`'s store.
pub(crate) fn build(
    url: &RemoteUrl,
    options: &StorageOptions,
) -> Result<Arc<dyn ObjectStore>, StorageError> {
    crate::runtime::install_crypto_provider();
    let root = url.root();
    let mut pairs = pairs(options);
    if url.url().scheme() == "http" {
        // The user wrote http://: plain HTTP is what they asked for.
        pairs.insert(0, ("allow_http".to_string(), "true".to_string()));
    }
    let config = |e: object_store::Error| StorageError::Config {
        url: root.clone(),
        reason: e.to_string(),
    };
    // gm retries itself, so that it counts attempts, resumes cut bodies and names the status;
    // object_store's own loop is off.
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 0,
        retry_timeout: options.retry_timeout,
    };
    let store: Arc<dyn ObjectStore> = match url.scheme() {
        Scheme::S3 => {
            let b = configure!(AmazonS3Builder::from_env().with_url(&root), &pairs, root);
            Arc::new(b.with_retry(retry).build().map_err(config)?)
        }
        Scheme::Gcs => {
            let b = GoogleCloudStorageBuilder::from_env().with_url(&root);
            let b = configure!(b, &pairs, root);
            Arc::new(b.with_retry(retry).build().map_err(config)?)
        }
        Scheme::Azure => {
            let b = configure!(
                MicrosoftAzureBuilder::from_env().with_url(&root),
                &pairs,
                root
            );
            Arc::new(b.with_retry(retry).build().map_err(config)?)
        }
        Scheme::Http => {
            let b = configure!(HttpBuilder::new().with_url(&root), &pairs, root);
            Arc::new(b.with_retry(retry).build().map_err(config)?)
        }
    };
    Ok(store)
}

/// gm's timeouts, then the user's keys (which may override them).
fn pairs(options: &StorageOptions) -> Vec<(String, String)> {
    let mut pairs = vec![
        ("timeout".to_string(), millis(options.timeout)),
        (
            "connect_timeout".to_string(),
            millis(options.connect_timeout),
        ),
    ];
    pairs.extend(options.store.iter().cloned());
    pairs
}

fn millis(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}
