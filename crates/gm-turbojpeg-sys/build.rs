//! Builds libjpeg-turbo 3.1.0 (its libjpeg and TurboJPEG APIs, SIMD left out) from the bundled
//! source with the `cc` crate, as its CMake build would with `ENABLE_STATIC=1 WITH_SIMD=0`:
//! the configured headers are written from their templates, the 12- and 16-bit copies of the
//! precision-dependent sources are compiled with their own `BITS_IN_JSAMPLE`, and everything
//! goes into one static library.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

const VERSION: &str = "3.1.0";
const VERSION_NUMBER: &str = "3001000";
const COPYRIGHT_YEAR: &str = "1991-2024";

/// Sources compiled at every precision (CMake's `JPEG16_SOURCES`).
const SOURCES_16: &[&str] = &[
    "jcapistd.c",
    "jccolor.c",
    "jcdiffct.c",
    "jclossls.c",
    "jcmainct.c",
    "jcprepct.c",
    "jcsample.c",
    "jdapistd.c",
    "jdcolor.c",
    "jddiffct.c",
    "jdlossls.c",
    "jdmainct.c",
    "jdpostct.c",
    "jdsample.c",
    "jutils.c",
];

/// Sources compiled at 8 and 12 bits besides those (`JPEG12_SOURCES`).
const SOURCES_12: &[&str] = &[
    "jccoefct.c",
    "jcdctmgr.c",
    "jdcoefct.c",
    "jddctmgr.c",
    "jdmerge.c",
    "jfdctfst.c",
    "jfdctint.c",
    "jidctflt.c",
    "jidctfst.c",
    "jidctint.c",
    "jidctred.c",
    "jquant1.c",
    "jquant2.c",
];

/// Sources compiled once, at 8 bits (the rest of `JPEG_SOURCES`, arithmetic coding included,
/// and the TurboJPEG library's own files).
const SOURCES_8: &[&str] = &[
    "jcapimin.c",
    "jchuff.c",
    "jcicc.c",
    "jcinit.c",
    "jclhuff.c",
    "jcmarker.c",
    "jcmaster.c",
    "jcomapi.c",
    "jcparam.c",
    "jcphuff.c",
    "jctrans.c",
    "jdapimin.c",
    "jdatadst.c",
    "jdatasrc.c",
    "jdhuff.c",
    "jdicc.c",
    "jdinput.c",
    "jdlhuff.c",
    "jdmarker.c",
    "jdmaster.c",
    "jdphuff.c",
    "jdtrans.c",
    "jerror.c",
    "jfdctflt.c",
    "jmemmgr.c",
    "jmemnobs.c",
    "jpeg_nbits.c",
    "jaricom.c",
    "jcarith.c",
    "jdarith.c",
    "turbojpeg.c",
    "transupp.c",
    "jdatadst-tj.c",
    "jdatasrc-tj.c",
    "rdbmp.c",
    "rdppm.c",
    "wrbmp.c",
    "wrppm.c",
];

/// TurboJPEG's PPM reader and writer at 12 and 16 bits (`turbojpeg12-static`, `-16-static`).
const SOURCES_PPM: &[&str] = &["rdppm.c", "wrppm.c"];

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let src = manifest.join("libjpeg-turbo").join("src");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let include = out.join("include");
    fs::create_dir_all(&include).expect("OUT_DIR is writable");
    configure(&src, &include);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=libjpeg-turbo/src");

    let mut objects = Vec::new();
    for bits in [12, 16] {
        let mut files: Vec<&str> = SOURCES_16.to_vec();
        if bits == 12 {
            files.extend_from_slice(SOURCES_12);
        }
        files.extend_from_slice(SOURCES_PPM);
        let mut build = base_build(&src, &include);
        build
            .define("BITS_IN_JSAMPLE", Some(bits.to_string().as_str()))
            .define("PPM_SUPPORTED", None)
            .out_dir(out.join(format!("j{bits}")));
        for f in files {
            build.file(src.join(f));
        }
        objects.extend(build.compile_intermediates());
    }
    let mut build = base_build(&src, &include);
    build
        .define("BMP_SUPPORTED", None)
        .define("PPM_SUPPORTED", None)
        .out_dir(out.join("j8"))
        .objects(objects);
    for f in SOURCES_16.iter().chain(SOURCES_12).chain(SOURCES_8) {
        build.file(src.join(f));
    }
    build.compile("turbojpeg");
    println!("cargo:include={}", include.display());
}

/// A `cc` build with libjpeg-turbo's include paths and release flags. The library is always
/// optimized: in a debug build of a user's crate it would otherwise decode at -O0.
fn base_build(src: &Path, include: &Path) -> cc::Build {
    let mut build = cc::Build::new();
    build
        .include(include)
        .include(src)
        .opt_level(3)
        .define("NDEBUG", None)
        .warnings(false)
        .cargo_warnings(false);
    build
}

/// Writes jconfig.h, jconfigint.h and jversion.h from their CMake templates.
fn configure(src: &Path, include: &Path) {
    let msvc = env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "msvc");
    let pointer_bytes = env::var("CARGO_CFG_TARGET_POINTER_WIDTH")
        .ok()
        .and_then(|w| w.parse::<u32>().ok())
        .map_or(8, |bits| bits / 8)
        .to_string();
    let (hidden, inline, thread_local) = if msvc {
        ("", "__forceinline", "__declspec(thread)")
    } else {
        (
            "__attribute__((visibility(\"hidden\")))",
            "__inline__ __attribute__((always_inline))",
            "__thread",
        )
    };
    let values: &[(&str, &str)] = &[
        ("JPEG_LIB_VERSION", "62"),
        ("VERSION", VERSION),
        ("LIBJPEG_TURBO_VERSION_NUMBER", VERSION_NUMBER),
        ("BUILD", "gm"),
        ("HIDDEN", hidden),
        ("INLINE", inline),
        ("THREAD_LOCAL", thread_local),
        ("CMAKE_PROJECT_NAME", "libjpeg-turbo"),
        ("SIZE_T", &pointer_bytes),
        ("COPYRIGHT_YEAR", COPYRIGHT_YEAR),
    ];
    // `#cmakedefine NAME` lines: on where listed, commented out (as CMake does) otherwise.
    let mut defined = vec!["C_ARITH_CODING_SUPPORTED", "D_ARITH_CODING_SUPPORTED"];
    defined.push(if msvc {
        "HAVE_INTRIN_H"
    } else {
        "HAVE_BUILTIN_CTZL"
    });
    for name in ["jconfig.h", "jconfigint.h", "jversion.h"] {
        let template = fs::read_to_string(src.join(format!("{name}.in")))
            .expect("the bundled source has its templates");
        let text = fill(&template, values, &defined);
        fs::write(include.join(name), text).expect("OUT_DIR is writable");
    }
}

/// One template filled: `@NAME@` replaced by its value, `#cmakedefine` lines resolved.
fn fill(template: &str, values: &[(&str, &str)], defined: &[&str]) -> String {
    let mut text = String::with_capacity(template.len());
    for line in template.lines() {
        let mut line = line.to_string();
        for (name, value) in values {
            line = line.replace(&format!("@{name}@"), value);
        }
        if let Some(rest) = line.strip_prefix("#cmakedefine ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            line = if defined.contains(&name) {
                format!("#define {rest}")
            } else {
                format!("/* #undef {name} */")
            };
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}
