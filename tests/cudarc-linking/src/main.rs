//! A program that uses gm and, through cudarc's `dynamic-linking`, links libcuda the way
//! candle's CUDA backend does: both see the same driver and the same primary context.

fn main() {
    match gm_cuda::available() {
        Ok(n) => {
            // The framework's view of the same driver, through the linked cudarc.
            let count = cudarc::driver::result::device::get_count();
            eprintln!("gm sees {n} CUDA device(s); cudarc (linked) sees {count:?}");
        }
        Err(e) => eprintln!("no CUDA here: {e}"),
    }
}
