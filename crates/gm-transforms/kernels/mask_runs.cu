// Masks written from their spans of 1s down the columns (COCO's run-length order: index
// x * h + y), one block per mask: the block zeroes the plane, then each warp sets the bytes of
// one span after another. The CPU twin is targets::MaskRuns::to_stack (mask_runs.rs).

// One mask to write; the layout of `MaskRunJob` in mask_runs_kernel.rs.
struct GmMaskRunJob {
    unsigned long long spans;  // `count` pairs of u32: start, length
    unsigned long long dst;    // the plane: h rows of w bytes
    unsigned int count;
    unsigned int w, h;
    unsigned int unused;
};

__device__ __forceinline__ void zero_plane(unsigned char* d, unsigned long long n) {
    // Bytes up to a 16-byte boundary, 16-byte stores, then the tail.
    unsigned long long head = (16 - ((unsigned long long)d & 15)) & 15;
    if (head > n) head = n;
    unsigned long long wide = (n - head) / 16;
    for (unsigned long long i = threadIdx.x; i < head; i += blockDim.x) d[i] = 0;
    uint4* v = (uint4*)(d + head);
    for (unsigned long long i = threadIdx.x; i < wide; i += blockDim.x) v[i] = make_uint4(0, 0, 0, 0);
    for (unsigned long long i = head + wide * 16 + threadIdx.x; i < n; i += blockDim.x) d[i] = 0;
}

extern "C" __global__ void gm_mask_runs(const GmMaskRunJob* __restrict__ jobs, int n_jobs) {
    if ((int)blockIdx.x >= n_jobs) return;
    const GmMaskRunJob job = jobs[blockIdx.x];
    unsigned char* dst = (unsigned char*)job.dst;
    unsigned long long pixels = (unsigned long long)job.w * job.h;
    zero_plane(dst, pixels);
    __syncthreads();
    const unsigned int* spans = (const unsigned int*)job.spans;
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (unsigned int s = warp; s < job.count; s += warps) {
        unsigned long long start = spans[2 * s];
        unsigned long long len = spans[2 * s + 1];
        if (start >= pixels) continue;
        if (len > pixels - start) len = pixels - start;
        for (unsigned long long k = lane; k < len; k += 32) {
            unsigned long long i = start + k;
            unsigned long long x = i / job.h, y = i - x * job.h;
            dst[y * job.w + x] = 1;
        }
    }
}
