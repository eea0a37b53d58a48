// The Gaussian blur pass (gm-transforms blur.rs, torchvision's gaussian_blur on uint8): the
// fused kernel wrote each image as u8 HWC; gm_blur_rows convolves its rows with the image's
// 1-D kernel into an f32 scratch image, gm_blur_cols its columns, rounds half to even to u8
// as torch's round_() does, then applies the output's normalize (v * scale + bias, unfused as
// the CPU twin computes it), dtype and layout. Padding is reflect (the edge not repeated).
// One thread per pixel, all channels (1 or 3, unrolled so the sums stay in registers);
// blockIdx.z is the image. CPU twin: blur.rs blur_image.

// `format` packs layout (bits 0-3: 0 CHW, 1 HWC), dtype (bits 4-7: 0 u8, 1 f16, 2 bf16,
// 3 f32) and channels (bits 8-15), as in batch_ops.cu.

// One image; the layout of `GmBlur` in blur_kernel.rs.
struct GmBlur {
    unsigned long long src;  // the fused kernel's u8 HWC image
    unsigned long long dst;  // the output image's first byte
    int wx, wy;              // offsets of the row and column kernels in `weights`
    int kx, ky;              // their lengths (odd)
    float scale[3], bias[3];
};

__device__ __forceinline__ int gb_reflect(int i, int n) {
    return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
}

__device__ __forceinline__ unsigned short gb_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ unsigned short gb_to_bf16(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void gm_blur_rows(const GmBlur* params, const float* weights, float* tmp,
                                        int width, int height, int channels) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const GmBlur& b = params[blockIdx.z];
    const unsigned char* src = (const unsigned char*)b.src + (long long)y * width * channels;
    const float* w = weights + b.wx;
    int r = b.kx / 2;
    float s[3] = {0.0f, 0.0f, 0.0f};
    for (int i = 0; i < b.kx; ++i) {
        const unsigned char* p = src + gb_reflect(x + i - r, width) * channels;
#pragma unroll
        for (int c = 0; c < 3; ++c)
            if (c < channels) s[c] = fmaf(w[i], (float)p[c], s[c]);
    }
    float* t = tmp + (((long long)blockIdx.z * height + y) * width + x) * channels;
#pragma unroll
    for (int c = 0; c < 3; ++c)
        if (c < channels) t[c] = s[c];
}

extern "C" __global__ void gm_blur_cols(const GmBlur* params, const float* weights,
                                        const float* tmp, int width, int height, int format) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const GmBlur& b = params[blockIdx.z];
    int layout = format & 15, dtype = (format >> 4) & 15, channels = (format >> 8) & 255;
    const float* img = tmp + (long long)blockIdx.z * height * width * channels + x * channels;
    const float* w = weights + b.wy;
    int r = b.ky / 2;
    float s[3] = {0.0f, 0.0f, 0.0f};
    for (int j = 0; j < b.ky; ++j) {
        const float* p = img + (long long)gb_reflect(y + j - r, height) * width * channels;
#pragma unroll
        for (int c = 0; c < 3; ++c)
            if (c < channels) s[c] = fmaf(w[j], p[c], s[c]);
    }
#pragma unroll
    for (int c = 0; c < 3; ++c) {
        if (c >= channels) break;
        float v = fminf(fmaxf(rintf(s[c]), 0.0f), 255.0f);
        float o = __fadd_rn(__fmul_rn(v, b.scale[c]), b.bias[c]);
        long long i = layout == 0 ? ((long long)c * height + y) * width + x
                                  : ((long long)y * width + x) * channels + c;
        switch (dtype) {
            case 0:
                ((unsigned char*)b.dst)[i] = (unsigned char)fminf(fmaxf(rintf(o), 0.0f), 255.0f);
                break;
            case 1: ((unsigned short*)b.dst)[i] = gb_to_f16(o); break;
            case 2: ((unsigned short*)b.dst)[i] = gb_to_bf16(o); break;
            default: ((float*)b.dst)[i] = o; break;
        }
    }
}

// GaussianNoise (noise.rs) in place on a finished float batch: element i of an image gets
// v + (mean + n * sigma), n = gb_noise(key, i), clamped to 0..1 with clip, unfused as the CPU
// twin computes it. Grid: x over the image's elements, z over the images with noise.
struct GmNoise {
    unsigned long long dst;  // the image's first byte
    unsigned long long key;
    float mean, sigma;
    int clip, pad;
};

// erase.rs's erase_noise (batch_ops.cu's bo_noise): Box-Muller on two 24-bit uniforms of a
// SplitMix64 hash.
__device__ __forceinline__ float gb_noise(unsigned long long key, unsigned long long i) {
    unsigned long long z = key ^ (i * 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float scale = 1.0f / 16777216.0f;
    float u1 = ((float)(unsigned int)(z >> 40) + 1.0f) * scale;
    float u2 = (float)(unsigned int)((z >> 8) & 0xffffffull) * scale;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

extern "C" __global__ void gm_noise_batch(const GmNoise* params, long long elements, int dtype) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= elements) return;
    const GmNoise& p = params[blockIdx.z];
    float v;
    switch (dtype) {
        case 1: {
            unsigned short h = ((const unsigned short*)p.dst)[i];
            asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(h));
            break;
        }
        case 2: v = __uint_as_float(((unsigned int)((const unsigned short*)p.dst)[i]) << 16); break;
        default: v = ((const float*)p.dst)[i]; break;
    }
    float n = gb_noise(p.key, (unsigned long long)i);
    float o = __fadd_rn(v, __fadd_rn(p.mean, __fmul_rn(n, p.sigma)));
    if (p.clip) o = fminf(fmaxf(o, 0.0f), 1.0f);
    switch (dtype) {
        case 1: ((unsigned short*)p.dst)[i] = gb_to_f16(o); break;
        case 2: ((unsigned short*)p.dst)[i] = gb_to_bf16(o); break;
        default: ((float*)p.dst)[i] = o; break;
    }
}
