// The fused image kernel of gm-transforms: for every output pixel of every image of a batch,
// read the source (RGB/BGR u8, or NV12/P016 straight from a decoder surface, or their 4:2:2
// and 4:4:4 forms), convert to RGB, crop, resize (nearest or bilinear, OpenCV's pixel-centre convention, replicated borders),
// flip, colour operations (torchvision's uint8 photometric ops, see colour.cuh), normalize
// (v * scale + bias per channel, v in 0..255) and store as u8/f16/bf16/f32 in CHW or HWC at
// the image's slot of the batch tensor. One read of each source pixel tap and one write of
// each output element; no intermediate images. A colour op that needs a whole-image
// statistic (contrast's mean grey, autocontrast's channel ranges, equalize's histograms) gets
// it from gm_colour_stats_*, a pre-pass that runs the same geometry and the ops before it and
// reduces the statistic per image (equalize's then becomes a lookup table in gm_colour_lut).
//
// The gm_*_warp_* entry points add a general sampling grid per image (GmWarpParams, a
// separate array so that the plain kernels keep their parameter block): an affine or
// perspective 3x3 matrix that the crop, resize and flips are folded into, sampled nearest or
// bilinear with torchvision's grid_sample fill blend (warp_sample). Images of a warp batch
// without a warp take the plain path of the same filter.
//
// The CPU twin of this kernel is gm_transforms::cpu::fused; keep the arithmetic identical.
//
// No FMA contraction in this file: NVRTC would otherwise fuse a*b+c (the resampling taps'
// lerps and sums, the YUV matrix, normalize) where Rust rounds the product first, and the
// resampled value would differ from the twin's in the last bit, which a u8 rounding, a colour
// op's truncation or equalize's histogram turns into whole steps. Where torch itself fuses
// (the warp's grid), the code says so with __fmaf_rn, which this option keeps.
// gm-nvrtc-options: --fmad=false

#define GM_MAX_COLOUR_OPS 8

struct GmFusedParams {
    unsigned long long src;         // RGB/BGR interleaved, or the luma plane
    unsigned long long src_chroma;  // interleaved UV plane (the NV and P formats); planar RGB's G plane (B as far past it)
    unsigned long long dst;         // this image's slot in the batch tensor
    unsigned long long stats;       // this image's statistics, one group per stats op (colour.cuh)
    int src_pitch;                  // bytes between rows (both planes)
    int src_w, src_h;
    int format;                     // 0 RGB8, 1 BGR8, 2 NV12, 3 P016, 4 NV16, 5 P216, 6 NV24, 7 P416, 8 planar RGB8
    int bit_depth;                  // bits per sample of P content (10, 12, 16)
    int matrix;                     // 0 BT.601, 1 BT.709, 2 BT.2020
    int full_range;
    float crop_x, crop_y, crop_w, crop_h;
    int flip_h, flip_v;
    int out_w, out_h;
    int layout;                     // 0 CHW, 1 HWC
    int dtype;                      // 0 u8, 1 f16, 2 bf16, 3 f32
    int bgr_out;                    // store channels as B, G, R
    int interp;                     // 0 nearest, 1 bilinear, 2 bicubic, 3 antialiased bilinear
    float scale[3], bias[3];
    int grey;                       // one output channel: 0.2989 R + 0.587 G + 0.114 B
    int win_x0, win_y0, win_x1, win_y1;  // the image taps are clamped to (crop or padded)
    float fill[3];                  // value of padded pixels
    int valid_x0, valid_y0, valid_x1, valid_y1;  // pixels that read the source
    int n_colour;                   // colour ops, applied in order after the geometry
    int colour_op[GM_MAX_COLOUR_OPS];   // codes of ColourOp::encode (colour.rs)
    float colour_a[GM_MAX_COLOUR_OPS];  // factor, hue shift, threshold or bits
    float colour_b[GM_MAX_COLOUR_OPS];  // 1 - factor, for the blends
    int orient;                     // display orientation: bit 0 flip x, 1 flip y, 2 transpose
    int chroma;                     // 0 replicate, else 1 | x_pos << 1 | y_pos << 10 (chroma.rs)
    int slot_w, slot_h;             // the image's slot in the batch: rows of slot_w, slot_h rows
    float slot_fill;                // output value of the slot's pixels right of or below the image
    int aa_exact;                   // 1: torchvision's uint8 antialias (aa_exact.rs); gm_aa_exact_prepare adds px << 8 | py << 16
    unsigned long long mask_src;    // the image's masks on the source canvas: mask_planes of mask_w x mask_h bytes
    unsigned long long mask_dst;    // the moved masks: mask_planes of out_w x out_h bytes
    unsigned long long mask_taps;   // out_w column taps, then out_h row taps (targets::MaskTaps)
    int mask_w, mask_h;
    int mask_planes;                // 0: no masks
    int aa_stride_x;                // words per output column of the exact antialias's table
    unsigned long long aa_taps;     // that table (gm_aa_exact_prepare fills it): out_w columns, then out_h rows
    int aa_stride_y;                // words per output row of the table
    int aa_unused;
};

// Chroma sample (cx, cy) as U and V.
__device__ __forceinline__ void chroma_sample(const GmFusedParams& p, int cx, int cy, bool wide, int depth, float* U, float* V) {
    const unsigned char* row = (const unsigned char*)p.src_chroma + (long long)cy * p.src_pitch;
    if (!wide) {
        *U = row[2 * cx]; *V = row[2 * cx + 1];
    } else {
        const unsigned short* c = (const unsigned short*)row + 2 * cx;
        *U = (float)(c[0] >> (16 - depth)); *V = (float)(c[1] >> (16 - depth));
    }
}

// Keys' cubic with a = -0.6 (swscale's default bicubic); chroma.rs's keys.
__device__ __forceinline__ float keys06(float d) {
    const float A = -0.6f;
    if (d < 1.0f) return ((A + 2.0f) * d - (A + 3.0f)) * d * d + 1.0f;
    if (d < 2.0f) return ((A * d - 5.0f * A) * d + 8.0f * A) * d - 4.0f * A;
    return 0.0f;
}

// swscale's chroma filter for luma sample i of luma_len from chroma_len samples sited pos/256
// luma samples in (chroma.rs's chroma_taps; the same integer positions, truncation and order).
__device__ __forceinline__ void chroma_taps(int i, int luma_len, int pos, int idx[5], float w[5]) {
    const long long ONE = 1LL << 17;
    long long l = luma_len, n = (luma_len + 1) >> 1;
    long long inc = ((n << 16) + (l >> 1)) / l;
    long long src_pos = ((long long)min(pos, 256) + 128) >> 1;
    long long x = inc - src_pos * 512 + 2 * inc * (long long)i;
    long long first = (x - 3 * (1LL << 16)) / ONE;  // truncates toward zero, as swscale's C does
    float sum = 0.0f;
    for (int j = 0; j < 5; j++) {
        long long at = first + j;
        long long dist = at * ONE - x;
        float d = (float)(dist < 0 ? -dist : dist) / (float)ONE;
        idx[j] = (int)min(max(at, 0LL), n - 1);
        w[j] = keys06(d);
        sum += w[j];
    }
    for (int j = 0; j < 5; j++) w[j] /= sum;
}

// U and V at stored luma sample (x, y), interpolated as swscale does: the horizontal pass,
// capped where its 15-bit intermediate saturates, then the vertical pass.
__device__ __forceinline__ void interpolated_chroma(const GmFusedParams& p, int x, int y, int sx, int sy, bool wide, int depth, float* U, float* V) {
    int sw = (p.orient & 4) ? p.src_h : p.src_w;
    int sh = (p.orient & 4) ? p.src_w : p.src_h;
    int xi[5], yi[5];
    float xw[5], yw[5];
    if (sx) {
        chroma_taps(x, sw, (p.chroma >> 1) & 511, xi, xw);
    } else {
        xi[0] = x; xw[0] = 1.0f;
        for (int j = 1; j < 5; j++) { xi[j] = 0; xw[j] = 0.0f; }
    }
    if (sy) {
        chroma_taps(y, sh, (p.chroma >> 10) & 511, yi, yw);
    } else {
        yi[0] = y; yw[0] = 1.0f;
        for (int j = 1; j < 5; j++) { yi[j] = 0; yw[j] = 0.0f; }
    }
    float cap = ldexpf(32767.0f, depth - 15);
    float u = 0.0f, v = 0.0f;
    for (int b = 0; b < 5; b++) {
        if (yw[b] == 0.0f) continue;
        float hu = 0.0f, hv = 0.0f;
        for (int a = 0; a < 5; a++) {
            if (xw[a] == 0.0f) continue;
            float cu, cv;
            chroma_sample(p, xi[a], yi[b], wide, depth, &cu, &cv);
            hu += xw[a] * cu;
            hv += xw[a] * cv;
        }
        u += yw[b] * fminf(hu, cap);
        v += yw[b] * fminf(hv, cap);
    }
    *U = u; *V = v;
}

// Taps are in displayed coordinates (src_w x src_h as shown): the stored pixel's.
__device__ __forceinline__ void stored_at(const GmFusedParams& p, int* x, int* y) {
    if (p.orient) {
        if (p.orient & 1) *x = p.src_w - 1 - *x;
        if (p.orient & 2) *y = p.src_h - 1 - *y;
        if (p.orient & 4) { int t = *x; *x = *y; *y = t; }
    }
}

// Pixel (x, y), displayed and inside the image, of an RGB source (formats 0, 1 and 8).
__device__ __forceinline__ void fetch_rgb8(const GmFusedParams& p, int x, int y, float rgb[3]) {
    stored_at(p, &x, &y);
    if (p.format == 8) {
        long long at = (long long)y * p.src_pitch + x;
        unsigned long long plane = p.src_chroma - p.src;
        const unsigned char* r = (const unsigned char*)p.src;
        rgb[0] = r[at];
        rgb[1] = r[plane + at];
        rgb[2] = r[2 * plane + at];
        return;
    }
    const unsigned char* px = (const unsigned char*)p.src + (long long)y * p.src_pitch + 3 * x;
    float a = px[0], b = px[1], c = px[2];
    rgb[0] = p.format == 0 ? a : c;
    rgb[1] = b;
    rgb[2] = p.format == 0 ? c : a;
}

__device__ __forceinline__ void fetch_rgb(const GmFusedParams& p, int x, int y, float rgb[3]) {
    // Taps are clamped to the image being resized (the crop, or the padded image); padding
    // reads the fill.
    x = min(max(x, p.win_x0), p.win_x1 - 1);
    y = min(max(y, p.win_y0), p.win_y1 - 1);
    if (x < p.valid_x0 || y < p.valid_y0 || x >= p.valid_x1 || y >= p.valid_y1) {
        rgb[0] = p.fill[0]; rgb[1] = p.fill[1]; rgb[2] = p.fill[2];
        return;
    }
    if (p.format <= 1 || p.format == 8) {
        fetch_rgb8(p, x, y, rgb);
        return;
    }
    stored_at(p, &x, &y);
    // Semi-planar: 2 NV12, 3 P016, 4 NV16, 5 P216, 6 NV24, 7 P416 (odd: 16-bit samples).
    int sx = p.format >= 6 ? 0 : 1;
    int sy = p.format <= 3 ? 1 : 0;
    bool wide = (p.format & 1) != 0;
    int depth = wide ? p.bit_depth : 8;
    float Y, U, V;
    float maxv = (float)((1 << depth) - 1);
    if (!wide) {
        Y = ((const unsigned char*)p.src)[(long long)y * p.src_pitch + x];
    } else {
        const unsigned short* l = (const unsigned short*)((const unsigned char*)p.src + (long long)y * p.src_pitch) + x;
        Y = (float)(l[0] >> (16 - depth));
    }
    if ((p.chroma & 1) && sx + sy > 0) {
        interpolated_chroma(p, x, y, sx, sy, wide, depth, &U, &V);
    } else {
        chroma_sample(p, x >> sx, y >> sy, wide, depth, &U, &V);
    }
    float k = (maxv + 1.0f) / 256.0f;  // 1 for 8-bit, 4 for 10-bit
    float yn, cb, cr;
    if (p.full_range) {
        yn = Y / maxv; cb = (U - 128.0f * k) / maxv; cr = (V - 128.0f * k) / maxv;
    } else {
        yn = (Y - 16.0f * k) / (219.0f * k); cb = (U - 128.0f * k) / (224.0f * k); cr = (V - 128.0f * k) / (224.0f * k);
    }
    float kr = p.matrix == 1 ? 0.2126f : (p.matrix == 2 ? 0.2627f : 0.299f);
    float kb = p.matrix == 1 ? 0.0722f : (p.matrix == 2 ? 0.0593f : 0.114f);
    float kg = 1.0f - kr - kb;
    float r = yn + 2.0f * (1.0f - kr) * cr;
    float b = yn + 2.0f * (1.0f - kb) * cb;
    float g = (yn - kr * r - kb * b) / kg;
    rgb[0] = fminf(fmaxf(r, 0.0f), 1.0f) * 255.0f;
    rgb[1] = fminf(fmaxf(g, 0.0f), 1.0f) * 255.0f;
    rgb[2] = fminf(fmaxf(b, 0.0f), 1.0f) * 255.0f;
}

// OpenCV's and torch's cubic convolution weights (A = -0.75) for a fraction t in [0, 1).
__device__ __forceinline__ void cubic_weights(float t, float w[4]) {
    const float A = -0.75f;
    float x0 = 1.0f + t, x1 = t, x2 = 1.0f - t;
    w[0] = ((A * x0 - 5.0f * A) * x0 + 8.0f * A) * x0 - 4.0f * A;
    w[1] = ((A + 2.0f) * x1 - (A + 3.0f)) * x1 * x1 + 1.0f;
    w[2] = ((A + 2.0f) * x2 - (A + 3.0f)) * x2 * x2 + 1.0f;
    w[3] = 1.0f - w[0] - w[1] - w[2];
}

// torch's antialiased bilinear (PIL's triangle filter widened by the scale): the first
// source index and the tap count for output index i, taps clipped to [lo, hi).
__device__ __forceinline__ void aa_span(float start, float scale, int i, int lo, int hi, int* first, int* count, float* center, float* invscale) {
    float support = scale >= 1.0f ? scale : 1.0f;
    *invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
    *center = start + scale * ((float)i + 0.5f);
    int xmin = max((int)(*center - support + 0.5f), lo);
    int xmax = min((int)(*center + support + 0.5f), hi);
    *first = xmin;
    *count = max(xmax - xmin, 1);
}

__device__ __forceinline__ float aa_weight(int j, float center, float invscale) {
    float x = ((float)j - center + 0.5f) * invscale;
    return fmaxf(0.0f, 1.0f - fabsf(x));
}

// torchvision's uint8 antialiased resize (aa_exact.rs, the CPU twin): per axis the span and
// weights of torch's _compute_indices_min_size_weights_aa in double, rounded to int16 at the
// axis's precision (computed on the host); a horizontal pass rounded to u8 per row, then the
// vertical pass. Only for u8 RGB sources and integral crops inside the image.
struct AaSpan {
    long long first, count;
    double center, invscale;
};

__device__ __forceinline__ AaSpan aa_exact_span(int input, int output, int i) {
    double scale = (double)input / (double)output;
    double support = scale >= 1.0 ? scale : 1.0;
    long long max_taps = (long long)ceil(support) * 2 + 1;
    AaSpan s;
    s.center = scale * ((double)i + 0.5);
    s.first = (long long)(s.center - support + 0.5);
    if (s.first < 0) s.first = 0;
    long long end = (long long)(s.center + support + 0.5);
    if (end > input) end = input;
    s.count = min(max(end - s.first, 0LL), max_taps);
    s.invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
    return s;
}

__device__ __forceinline__ double aa_exact_filter(const AaSpan& s, long long j) {
    double x = fabs((((double)(j + s.first) - s.center) + 0.5) * s.invscale);
    return x < 1.0 ? 1.0 - x : 0.0;
}

__device__ __forceinline__ double aa_exact_total(const AaSpan& s) {
    double t = 0.0;
    for (long long j = 0; j < s.count; ++j) t += aa_exact_filter(s, j);
    return t;
}

__device__ __forceinline__ int aa_exact_weight(const AaSpan& s, double total, long long j, int precision) {
    double w = total != 0.0 ? aa_exact_filter(s, j) / total : 0.0;
    double v = w * (double)(1 << precision);
    return v < 0.0 ? (int)(-0.5 + v) : (int)(0.5 + v);
}

__device__ __forceinline__ unsigned short to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ unsigned short to_bf16(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

// The largest normalized weight of an axis, over its outputs i = start, start + step, ...
__device__ __forceinline__ double aa_exact_largest(int input, int output, int start, int step) {
    double largest = 0.0;
    for (int i = start; i < output; i += step) {
        AaSpan s = aa_exact_span(input, output, i);
        double t = aa_exact_total(s);
        if (t == 0.0) continue;
        for (long long j = 0; j < s.count; ++j) largest = fmax(largest, aa_exact_filter(s, j) / t);
    }
    return largest;
}

// torch's precision for an axis whose largest weight is `largest` (aa_exact::precision).
__device__ __forceinline__ int aa_exact_precision(double largest) {
    for (int p = 0; p < 22; ++p) {
        if ((int)(0.5 + largest * (double)(1 << (p + 1))) >= (1 << 15)) return p;
    }
    return 22;
}

// Both axes' precisions into sp->aa_exact, every thread of the block taking some outputs:
// non-negative doubles order as their bits, so one atomicMax per thread and axis.
__device__ __noinline__ void aa_exact_precisions(GmFusedParams* sp) {
    __shared__ unsigned long long largest[2];
    int tid = threadIdx.y * blockDim.x + threadIdx.x, threads = blockDim.x * blockDim.y;
    if (tid < 2) largest[tid] = 0ull;
    __syncthreads();
    double lx = aa_exact_largest((int)sp->crop_w, sp->out_w, tid, threads);
    double ly = aa_exact_largest((int)sp->crop_h, sp->out_h, tid, threads);
    atomicMax(&largest[0], (unsigned long long)__double_as_longlong(lx));
    atomicMax(&largest[1], (unsigned long long)__double_as_longlong(ly));
    __syncthreads();
    if (tid == 0) {
        int px = aa_exact_precision(__longlong_as_double((long long)largest[0]));
        int py = aa_exact_precision(__longlong_as_double((long long)largest[1]));
        sp->aa_exact = 1 | px << 8 | py << 16;
    }
    __syncthreads();
}

// Axis `table`'s entries for outputs start, start + step, ...: each output's first source tap
// (relative to the crop), its tap count and its weights at `precision` bits, `stride` words
// an output (aa_exact.rs's table_stride: 2 + the axis's most taps).
__device__ void aa_exact_table(int input, int output, int precision, int stride, int* table, int start, int step) {
    for (int i = start; i < output; i += step) {
        AaSpan s = aa_exact_span(input, output, i);
        double t = aa_exact_total(s);
        int n = (int)min(s.count, (long long)(stride - 2));
        int* e = table + (long long)i * stride;
        e[0] = (int)s.first;
        e[1] = n;
        for (int j = 0; j < n; ++j) e[2 + j] = aa_exact_weight(s, t, j, precision);
    }
}

// Output pixel (ox, oy), before flips, of torchvision's uint8 antialiased resize of the
// integral crop: aa_exact::sample is the twin. The spans and integer weights come from the
// image's table (gm_aa_exact_prepare), shared by every pixel of a column or row: computed per
// pixel in double they made the kernel 1.02 ms of a detection batch (16 photos upscaled to
// about 800x1066 float, H200, 2026-11-29; 85% of the GPU's busy time), 0.74 ms from the
// table, 0.47 ms in gm_fused_aa_exact.
__device__ __forceinline__ void aa_exact_sample(const GmFusedParams& p, int ox, int oy, float rgb[3]) {
    int x0 = (int)p.crop_x, y0 = (int)p.crop_y;
    int px = (p.aa_exact >> 8) & 255, py = (p.aa_exact >> 16) & 255;
    const int* tx = (const int*)p.aa_taps + (long long)ox * p.aa_stride_x;
    const int* ty = (const int*)p.aa_taps + (long long)p.out_w * p.aa_stride_x + (long long)oy * p.aa_stride_y;
    int fx = x0 + tx[0], nx = tx[1], fy = y0 + ty[0], ny = ty[1];
    int acc[3] = {1 << (py - 1), 1 << (py - 1), 1 << (py - 1)};
    for (int b = 0; b < ny; ++b) {
        int wy = ty[2 + b];
        int row[3] = {1 << (px - 1), 1 << (px - 1), 1 << (px - 1)};
        for (int a = 0; a < nx; ++a) {
            int wx = tx[2 + a];
            float t[3];
            // An integral crop inside an RGB source (aa_exact::applies): no clamps, no fill.
            fetch_rgb8(p, fx + a, fy + b, t);
            for (int c = 0; c < 3; ++c) row[c] += (int)t[c] * wx;
        }
        for (int c = 0; c < 3; ++c) acc[c] += min(max(row[c] >> px, 0), 255) * wy;
    }
    for (int c = 0; c < 3; ++c) rgb[c] = (float)min(max(acc[c] >> py, 0), 255);
}

// The image's parameters, loaded once per block into shared memory: every thread reads
// them, and a per-thread copy would cost ~70 registers.
__device__ __forceinline__ void load_params(const GmFusedParams* __restrict__ params, int i, GmFusedParams* sp) {
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    if (tid < (int)(sizeof(GmFusedParams) / 4)) {
        ((int*)sp)[tid] = ((const int*)&params[i])[tid];
    }
    __syncthreads();
}

// The INTERP of the exact antialias's own entry points (gm_fused_aa_exact*), for launches
// whose every image takes it: without the float antialias and the YUV taps the general
// antialias kernel compiles in, they need about half its 125 registers a thread (ncu, H200,
// 2026-11-29: 2 blocks per SM at 125; bounding that kernel to 64 spilled and slowed the
// downscaling classification batches).
#define GM_AA_EXACT 8

// The geometry's value (RGB, 0..255, unrounded) of output pixel (x, y). One body, compiled
// once per filter (INTERP = GmFusedParams::interp, or GM_AA_EXACT), so that the light filters
// do not pay the registers of the heavy ones.
template <int INTERP>
__device__ __forceinline__ void sample_plain(const GmFusedParams& p, int x, int y, float rgb[3]) {
    int ox = p.flip_h ? p.out_w - 1 - x : x;
    int oy = p.flip_v ? p.out_h - 1 - y : y;
    float sx = p.crop_w / (float)p.out_w, sy = p.crop_h / (float)p.out_h;
    if (INTERP == 0) {
        int xi = (int)floorf(p.crop_x + ((float)ox + 0.5f) * sx);
        int yi = (int)floorf(p.crop_y + ((float)oy + 0.5f) * sy);
        fetch_rgb(p, xi, yi, rgb);
    } else if (INTERP == GM_AA_EXACT || (INTERP == 3 && (p.aa_exact & 1))) {
        aa_exact_sample(p, ox, oy, rgb);
    } else if (INTERP == 3) {
        int lox = max((int)floorf(p.crop_x), p.win_x0), hix = min((int)ceilf(p.crop_x + p.crop_w), p.win_x1);
        int loy = max((int)floorf(p.crop_y), p.win_y0), hiy = min((int)ceilf(p.crop_y + p.crop_h), p.win_y1);
        int fx0, nx, fy0, ny;
        float cx, cy, ix, iy;
        aa_span(p.crop_x, sx, ox, lox, hix, &fx0, &nx, &cx, &ix);
        aa_span(p.crop_y, sy, oy, loy, hiy, &fy0, &ny, &cy, &iy);
        float wx_total = 0.0f, wy_total = 0.0f;
        for (int a = 0; a < nx; ++a) wx_total += aa_weight(fx0 + a, cx, ix);
        for (int b = 0; b < ny; ++b) wy_total += aa_weight(fy0 + b, cy, iy);
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        for (int b = 0; b < ny; ++b) {
            float wy = aa_weight(fy0 + b, cy, iy) / wy_total;
            float row[3] = {0.0f, 0.0f, 0.0f};
            for (int a = 0; a < nx; ++a) {
                float wx = aa_weight(fx0 + a, cx, ix) / wx_total;
                float t[3];
                fetch_rgb(p, fx0 + a, fy0 + b, t);
                for (int c = 0; c < 3; ++c) row[c] += wx * t[c];
            }
            for (int c = 0; c < 3; ++c) rgb[c] += wy * row[c];
        }
    } else if (INTERP == 2) {
        float fx = p.crop_x + ((float)ox + 0.5f) * sx - 0.5f;
        float fy = p.crop_y + ((float)oy + 0.5f) * sy - 0.5f;
        float x0f = floorf(fx), y0f = floorf(fy);
        float wx[4], wy[4];
        cubic_weights(fx - x0f, wx);
        cubic_weights(fy - y0f, wy);
        int x0 = (int)x0f, y0 = (int)y0f;
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        for (int b = 0; b < 4; ++b) {
            int yi = y0 - 1 + b;
            float row[3] = {0.0f, 0.0f, 0.0f};
            for (int a = 0; a < 4; ++a) {
                int xi = x0 - 1 + a;
                float t[3];
                fetch_rgb(p, xi, yi, t);
                for (int c = 0; c < 3; ++c) row[c] += wx[a] * t[c];
            }
            for (int c = 0; c < 3; ++c) rgb[c] += wy[b] * row[c];
        }
    } else {
        float fx = p.crop_x + ((float)ox + 0.5f) * sx - 0.5f;
        float fy = p.crop_y + ((float)oy + 0.5f) * sy - 0.5f;
        float x0f = floorf(fx), y0f = floorf(fy);
        float ax = fx - x0f, ay = fy - y0f;
        int x0 = (int)x0f, y0 = (int)y0f;
        int xa = x0, xb = x0 + 1;
        int ya = y0, yb = y0 + 1;
        float t00[3], t01[3], t10[3], t11[3];
        fetch_rgb(p, xa, ya, t00);
        fetch_rgb(p, xb, ya, t01);
        fetch_rgb(p, xa, yb, t10);
        fetch_rgb(p, xb, yb, t11);
        for (int c = 0; c < 3; ++c) {
            float top = t00[c] + (t01[c] - t00[c]) * ax;
            float bot = t10[c] + (t11[c] - t10[c]) * ax;
            rgb[c] = top + (bot - top) * ay;
        }
    }
}

// An image's sampling grid (fused.rs' GmWarpParams, types.rs' Warp), in torchvision's own
// arithmetic: u = x + origin; p = m * (u, v, 1); g = p.xy / p.z + post; the source tap
// position is (g + 1) * scale + shift. on == 0 for an image of a warp batch that has no warp
// (it samples through its crop and flips).
struct GmWarpParams {
    float m[9];
    float origin[2];
    float post;
    float scale[2];
    float shift[2];
    int blend;  // 0: torchvision's fill=None (zeros padding, no fill blend)
    int nearest;  // nearest taps, else bilinear (the warp's own interpolation)
    int on;
};

// The block's image's grid, loaded once per block by the warp entry points.
__shared__ GmWarpParams gm_warp;

// INTERP values of the warp entry points: GM_WARP + the output's filter, which serves the
// images of the batch without a warp; a warped image samples through gm_warp with its own
// nearest or bilinear taps.
#define GM_WARP 4

// Whether INTERP is a warp entry point's.
#define GM_IS_WARP(INTERP) ((INTERP) >= GM_WARP && (INTERP) < GM_WARP + 4)

__device__ __forceinline__ void load_warp(const GmWarpParams* __restrict__ warps, int i) {
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    if (tid < (int)(sizeof(GmWarpParams) / 4)) {
        ((int*)&gm_warp)[tid] = ((const int*)&warps[i])[tid];
    }
    __syncthreads();
}

// torchvision's _apply_grid_transform at output pixel (x, y): grid_sample (zeros padding,
// align_corners=False) of the image and of a mask of ones, taps outside the window (the
// image being warped) reading nothing; then (v - fill) * mask + fill for bilinear, the fill
// where no tap is inside for nearest (half-to-even rounding, as grid_sample's nearbyint).
// Every product and sum is rounded on its own, as the CPU twin (cpu::warp) and torch do.
template <bool NEAREST>
__device__ __forceinline__ void warp_sample(const GmFusedParams& p, int x, int y, float rgb[3]) {
    const GmWarpParams& g = gm_warp;
    const float* m = g.m;
    // torch's CPU bmm: u * m0 rounded, one fused multiply-add of v * m1, then + m2.
    float u = __fadd_rn((float)x, g.origin[0]), v = __fadd_rn((float)y, g.origin[1]);
    float px = __fadd_rn(__fmaf_rn(v, m[1], __fmul_rn(u, m[0])), m[2]);
    float py = __fadd_rn(__fmaf_rn(v, m[4], __fmul_rn(u, m[3])), m[5]);
    float pz = __fadd_rn(__fmaf_rn(v, m[7], __fmul_rn(u, m[6])), m[8]);
    float gx = __fadd_rn(__fdiv_rn(px, pz), g.post), gy = __fadd_rn(__fdiv_rn(py, pz), g.post);
    float fx = __fadd_rn(__fmul_rn(__fadd_rn(gx, 1.0f), g.scale[0]), g.shift[0]);
    float fy = __fadd_rn(__fmul_rn(__fadd_rn(gy, 1.0f), g.scale[1]), g.shift[1]);
    // Far outside (or not a number, past the horizon) reads the fill.
    fx = fminf(fmaxf(fx, -1e6f), 1e6f);
    fy = fminf(fmaxf(fy, -1e6f), 1e6f);
    if (NEAREST) {
        int xi = (int)rintf(fx), yi = (int)rintf(fy);
        if (xi >= p.win_x0 && yi >= p.win_y0 && xi < p.win_x1 && yi < p.win_y1) {
            fetch_rgb(p, xi, yi, rgb);
        } else {
            rgb[0] = p.fill[0]; rgb[1] = p.fill[1]; rgb[2] = p.fill[2];
        }
        return;
    }
    float x0f = floorf(fx), y0f = floorf(fy);
    int x0 = (int)x0f, y0 = (int)y0f;
    float e = __fsub_rn(fx, x0f), s = __fsub_rn(fy, y0f);
    float we = __fsub_rn(1.0f, e), wn = __fsub_rn(1.0f, s);
    float wts[4] = {__fmul_rn(we, wn), __fmul_rn(e, wn), __fmul_rn(we, s), __fmul_rn(e, s)};
    float acc[3] = {0.0f, 0.0f, 0.0f};
    float mask = 0.0f;
    for (int k = 0; k < 4; ++k) {
        int xi = x0 + (k & 1), yi = y0 + (k >> 1);
        if (xi >= p.win_x0 && yi >= p.win_y0 && xi < p.win_x1 && yi < p.win_y1) {
            float t[3];
            fetch_rgb(p, xi, yi, t);
            for (int c = 0; c < 3; ++c) acc[c] = __fadd_rn(acc[c], __fmul_rn(t[c], wts[k]));
            mask = __fadd_rn(mask, wts[k]);
        }
    }
    for (int c = 0; c < 3; ++c) {
        rgb[c] = g.blend ? __fadd_rn(__fmul_rn(__fsub_rn(acc[c], p.fill[c]), mask), p.fill[c]) : acc[c];
    }
}

// The geometry's value of output pixel (x, y): the plain path for INTERP 0..3, and for the
// warp entry points' INTERP (GM_WARP + filter) the image's grid, or the plain path of the
// filter for an image without one.
template <int INTERP>
__device__ __forceinline__ void sample(const GmFusedParams& p, int x, int y, float rgb[3]) {
    if constexpr (GM_IS_WARP(INTERP)) {
        if (gm_warp.on) {
            if (gm_warp.nearest) {
                warp_sample<true>(p, x, y, rgb);
            } else {
                warp_sample<false>(p, x, y, rgb);
            }
        } else {
            sample_plain<INTERP - GM_WARP>(p, x, y, rgb);
        }
    } else {
        sample_plain<INTERP>(p, x, y, rgb);
    }
}

#include "colour.cuh"

// Stores channel c of slot pixel (x, y) in the image's layout and type; rows of the slot's
// width, so that a padded batch's images sit in slots larger than themselves.
__device__ __forceinline__ void store_value(const GmFusedParams& p, int x, int y, int c, int channels, int plane, float v) {
    long long idx = p.layout == 0 ? (long long)c * plane + (long long)y * p.slot_w + x
                                  : ((long long)y * p.slot_w + x) * channels + c;
    switch (p.dtype) {
        case 0: ((unsigned char*)p.dst)[idx] = (unsigned char)fminf(fmaxf(rintf(v), 0.0f), 255.0f); break;
        case 1: ((unsigned short*)p.dst)[idx] = to_f16(v); break;
        case 2: ((unsigned short*)p.dst)[idx] = to_bf16(v); break;
        default: ((float*)p.dst)[idx] = v; break;
    }
}

// Normalizes rgb and stores output pixel (x, y) in the image's layout and type.
__device__ __forceinline__ void store(const GmFusedParams& p, int x, int y, float rgb[3]) {
    int plane = p.slot_w * p.slot_h;
    int channels = 3;
    if (p.grey) {
        rgb[0] = 0.2989f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];
        channels = 1;
    }
    for (int c = 0; c < channels; ++c) {
        int src_c = p.grey ? 0 : (p.bgr_out ? 2 - c : c);
        float v = rgb[src_c] * p.scale[c] + p.bias[c];
        store_value(p, x, y, c, channels, plane, v);
    }
}

// Fills slot pixel (x, y), outside the image, with the slot's fill (a padded batch).
__device__ __forceinline__ void store_fill(const GmFusedParams& p, int x, int y) {
    int channels = p.grey ? 1 : 3;
    for (int c = 0; c < channels; ++c) store_value(p, x, y, c, channels, p.slot_w * p.slot_h, p.slot_fill);
}

// The byte of a moved mask at column tap tx and row tap ty of one source plane: a source
// index, or -1 - (fill | step << 8) where a crop or pad brought the pixel in (the later
// step's fill where both are). targets::MaskTaps::gather is the CPU twin.
__device__ __forceinline__ unsigned char mask_value(const unsigned char* plane, int w, int h, int tx, int ty) {
    if (tx < 0 || ty < 0) {
        int fx = -1 - tx, fy = -1 - ty;
        int v = tx >= 0 ? fy : (ty >= 0 || (fx >> 8) > (fy >> 8)) ? fx : fy;
        return (unsigned char)(v & 255);
    }
    if (tx >= w || ty >= h) return 0;
    return plane[(long long)ty * w + tx];
}

// Output pixel (x, y) of every mask of the image: nearest, through the same geometry as its
// pixels, read from the source planes once (the taps are the geometry per axis).
__device__ __forceinline__ void store_masks(const GmFusedParams& p, int x, int y) {
    const int* taps = (const int*)p.mask_taps;
    int tx = taps[x], ty = taps[p.out_w + y];
    long long src_plane = (long long)p.mask_w * p.mask_h;
    long long dst_plane = (long long)p.out_w * p.out_h;
    const unsigned char* src = (const unsigned char*)p.mask_src;
    unsigned char* dst = (unsigned char*)p.mask_dst + (long long)y * p.out_w + x;
    for (int k = 0; k < p.mask_planes; ++k) {
        dst[k * dst_plane] = mask_value(src + k * src_plane, p.mask_w, p.mask_h, tx, ty);
    }
}

// Which colour code a fused entry point compiles in, chosen per batch by FusedKernel::run
// (fused.rs): none (the plain geometry-and-store kernel, no colour code and none of its
// registers or branches), the point ops (every op but sharpness: one pass over the pixel,
// stats ops reading their sums), or the point ops and sharpness (re-samples 8 neighbours
// through the geometry and the ops before it: far more code and registers). A batch uses the
// lightest variant that holds every op of every image in it.
#define GM_COLOUR_NONE 0
#define GM_COLOUR_POINT 1
#define GM_COLOUR_SHARPEN 2

template <int INTERP, int COLOUR>
__device__ __forceinline__ void fused_body(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    int i = blockIdx.z;
    if (i >= count) return;
    __shared__ GmFusedParams sp;
    load_params(params, i, &sp);
    if constexpr (GM_IS_WARP(INTERP)) load_warp(warps, i);
    const GmFusedParams& p = sp;
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.out_w || y >= p.out_h) {
        if (x < p.slot_w && y < p.slot_h) store_fill(p, x, y);
        return;
    }
    if (p.mask_planes > 0) store_masks(p, x, y);
    float rgb[3];
    sample<INTERP>(p, x, y, rgb);
    if constexpr (COLOUR != GM_COLOUR_NONE) {
        if (p.n_colour > 0) colour_ops<COLOUR == GM_COLOUR_SHARPEN, INTERP>(p, rgb, x, y, -1, -1);
    }
    store(p, x, y, rgb);
}

// The sum (or the max) of v over the 256 threads of a block, in shared memory.
__device__ __forceinline__ unsigned int block_reduce(unsigned int* partial, unsigned int v, bool is_max) {
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    partial[tid] = v;
    __syncthreads();
    for (int half = blockDim.x * blockDim.y / 2; half > 0; half >>= 1) {
        if (tid < half) partial[tid] = is_max ? max(partial[tid], partial[tid + half]) : partial[tid] + partial[tid + half];
        __syncthreads();
    }
    unsigned int r = partial[0];
    __syncthreads();  // the next reduction may overwrite partial
    return r;
}

// The block's pixels counted per channel and value in shared memory, then added to the
// image's global bins (one atomic per non-empty bin and block).
__device__ __forceinline__ void block_histogram(unsigned int* hist, const float rgb[3], bool inside, unsigned int* bins) {
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    int threads = blockDim.x * blockDim.y;
    for (int k = tid; k < 768; k += threads) hist[k] = 0;
    __syncthreads();
    if (inside) {
        for (int c = 0; c < 3; ++c) atomicAdd(&hist[c * 256 + (int)rgb[c]], 1u);
    }
    __syncthreads();
    for (int k = tid; k < 768; k += threads) {
        if (hist[k] > 0) atomicAdd(bins + k, hist[k]);
    }
}

// Statistics pre-pass `stage`: the geometry and the colour ops before the image's stage-th
// stats op, then that op's statistic reduced over the block and folded into the op's group of
// the image's sums (stats_op_at) with one atomic per block and word: the floored grey's
// sum for contrast, the per-channel max of 255 - v and of v for autocontrast, per-channel
// histograms for equalize. Integer results: exact, whatever order the blocks run in.
// SHARPEN: whether a sharpness op may come before the stats op (as fused_body's COLOUR).
template <int INTERP, bool SHARPEN>
__device__ __forceinline__ void stats_body(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    int i = blockIdx.z;
    if (i >= count) return;
    __shared__ GmFusedParams sp;
    __shared__ unsigned int partial[256];
    __shared__ unsigned int hist[768];
    load_params(params, i, &sp);
    if constexpr (GM_IS_WARP(INTERP)) load_warp(warps, i);
    const GmFusedParams& p = sp;
    int offset;
    int code = stats_op_at(p, stage, &offset);  // the same for the whole block
    if (code == 0) return;
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    float rgb[3] = {0.0f, 0.0f, 0.0f};
    bool inside = x < p.out_w && y < p.out_h;
    if (inside) {
        sample<INTERP>(p, x, y, rgb);
        colour_ops<SHARPEN, INTERP>(p, rgb, x, y, stage, -1);
    }
    unsigned long long* words = (unsigned long long*)p.stats + offset;
    bool lead = threadIdx.x == 0 && threadIdx.y == 0;
    if (code == GM_OP_EQUALIZE) {
        block_histogram(hist, rgb, inside, (unsigned int*)words);
        return;
    }
    if (code == GM_OP_CONTRAST) {
        unsigned int sum = block_reduce(partial, inside ? (unsigned int)floorf(grey(rgb)) : 0u, false);
        if (lead && sum > 0) atomicAdd(words, (unsigned long long)sum);
        return;
    }
    for (int c = 0; c < 3; ++c) {
        unsigned int lo = block_reduce(partial, inside ? (unsigned int)(255.0f - rgb[c]) : 0u, true);
        unsigned int hi = block_reduce(partial, inside ? (unsigned int)rgb[c] : 0u, true);
        if (lead) {
            atomicMax(words + c, (unsigned long long)lo);
            atomicMax(words + 3 + c, (unsigned long long)hi);
        }
    }
}

extern "C" __global__ void gm_fused_nearest(const GmFusedParams* __restrict__ params, int count) {
    fused_body<0, GM_COLOUR_NONE>(params, nullptr, count);
}
// Six 256-thread blocks per SM need at most 40 registers a thread (allocated in steps of 8).
// The colour work's larger parameter block tipped ptxas to 42 registers, 5 blocks per SM,
// and 8-14% more time on the plain path (ncu, H200, 2026-11-23); the bound holds it at 40.
// Bicubic: 83 -> 72 registers, 2 -> 3 blocks per SM, 28% faster.
extern "C" __global__ void __launch_bounds__(256, 6) gm_fused_bilinear(const GmFusedParams* __restrict__ params, int count) {
    fused_body<1, GM_COLOUR_NONE>(params, nullptr, count);
}
extern "C" __global__ void __launch_bounds__(256, 3) gm_fused_bicubic(const GmFusedParams* __restrict__ params, int count) {
    fused_body<2, GM_COLOUR_NONE>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_antialias(const GmFusedParams* __restrict__ params, int count) {
    fused_body<3, GM_COLOUR_NONE>(params, nullptr, count);
}

// The exact antialias alone (GM_AA_EXACT), plain and with point colour ops: FusedKernel
// picks them when every image of a launch takes the exact path.
extern "C" __global__ void gm_fused_aa_exact(const GmFusedParams* __restrict__ params, int count) {
    fused_body<GM_AA_EXACT, GM_COLOUR_NONE>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_colour_aa_exact(const GmFusedParams* __restrict__ params, int count) {
    fused_body<GM_AA_EXACT, GM_COLOUR_POINT>(params, nullptr, count);
}

extern "C" __global__ void gm_fused_colour_nearest(const GmFusedParams* __restrict__ params, int count) {
    fused_body<0, GM_COLOUR_POINT>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_colour_bilinear(const GmFusedParams* __restrict__ params, int count) {
    fused_body<1, GM_COLOUR_POINT>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_colour_bicubic(const GmFusedParams* __restrict__ params, int count) {
    fused_body<2, GM_COLOUR_POINT>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_colour_antialias(const GmFusedParams* __restrict__ params, int count) {
    fused_body<3, GM_COLOUR_POINT>(params, nullptr, count);
}

extern "C" __global__ void gm_fused_sharpen_nearest(const GmFusedParams* __restrict__ params, int count) {
    fused_body<0, GM_COLOUR_SHARPEN>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_sharpen_bilinear(const GmFusedParams* __restrict__ params, int count) {
    fused_body<1, GM_COLOUR_SHARPEN>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_sharpen_bicubic(const GmFusedParams* __restrict__ params, int count) {
    fused_body<2, GM_COLOUR_SHARPEN>(params, nullptr, count);
}
extern "C" __global__ void gm_fused_sharpen_antialias(const GmFusedParams* __restrict__ params, int count) {
    fused_body<3, GM_COLOUR_SHARPEN>(params, nullptr, count);
}

extern "C" __global__ void gm_colour_stats_nearest(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<0, false>(params, nullptr, count, stage);
}
extern "C" __global__ void gm_colour_stats_bilinear(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<1, false>(params, nullptr, count, stage);
}
extern "C" __global__ void gm_colour_stats_bicubic(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<2, false>(params, nullptr, count, stage);
}
extern "C" __global__ void gm_colour_stats_antialias(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<3, false>(params, nullptr, count, stage);
}

extern "C" __global__ void gm_colour_stats_sharpen_nearest(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<0, true>(params, nullptr, count, stage);
}
extern "C" __global__ void gm_colour_stats_sharpen_bilinear(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<1, true>(params, nullptr, count, stage);
}
extern "C" __global__ void gm_colour_stats_sharpen_bicubic(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<2, true>(params, nullptr, count, stage);
}
extern "C" __global__ void gm_colour_stats_sharpen_antialias(const GmFusedParams* __restrict__ params, int count, int stage) {
    stats_body<3, true>(params, nullptr, count, stage);
}

// The warp entry points (INTERP GM_WARP + the output's filter), one per colour variant and filter.
extern "C" __global__ void gm_fused_warp_nearest(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 0, GM_COLOUR_NONE>(params, warps, count);
}
extern "C" __global__ void gm_fused_warp_bilinear(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 1, GM_COLOUR_NONE>(params, warps, count);
}
extern "C" __global__ void gm_fused_warp_bicubic(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 2, GM_COLOUR_NONE>(params, warps, count);
}
extern "C" __global__ void gm_fused_warp_antialias(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 3, GM_COLOUR_NONE>(params, warps, count);
}
extern "C" __global__ void gm_fused_colour_warp_nearest(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 0, GM_COLOUR_POINT>(params, warps, count);
}
extern "C" __global__ void gm_fused_colour_warp_bilinear(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 1, GM_COLOUR_POINT>(params, warps, count);
}
extern "C" __global__ void gm_fused_colour_warp_bicubic(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 2, GM_COLOUR_POINT>(params, warps, count);
}
extern "C" __global__ void gm_fused_colour_warp_antialias(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 3, GM_COLOUR_POINT>(params, warps, count);
}
extern "C" __global__ void gm_fused_sharpen_warp_nearest(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 0, GM_COLOUR_SHARPEN>(params, warps, count);
}
extern "C" __global__ void gm_fused_sharpen_warp_bilinear(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 1, GM_COLOUR_SHARPEN>(params, warps, count);
}
extern "C" __global__ void gm_fused_sharpen_warp_bicubic(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 2, GM_COLOUR_SHARPEN>(params, warps, count);
}
extern "C" __global__ void gm_fused_sharpen_warp_antialias(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count) {
    fused_body<GM_WARP + 3, GM_COLOUR_SHARPEN>(params, warps, count);
}
extern "C" __global__ void gm_colour_stats_warp_nearest(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 0, false>(params, warps, count, stage);
}
extern "C" __global__ void gm_colour_stats_warp_bilinear(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 1, false>(params, warps, count, stage);
}
extern "C" __global__ void gm_colour_stats_warp_bicubic(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 2, false>(params, warps, count, stage);
}
extern "C" __global__ void gm_colour_stats_warp_antialias(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 3, false>(params, warps, count, stage);
}
extern "C" __global__ void gm_colour_stats_sharpen_warp_nearest(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 0, true>(params, warps, count, stage);
}
extern "C" __global__ void gm_colour_stats_sharpen_warp_bilinear(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 1, true>(params, warps, count, stage);
}
extern "C" __global__ void gm_colour_stats_sharpen_warp_bicubic(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 2, true>(params, warps, count, stage);
}
extern "C" __global__ void gm_colour_stats_sharpen_warp_antialias(const GmFusedParams* __restrict__ params, const GmWarpParams* __restrict__ warps, int count, int stage) {
    stats_body<GM_WARP + 3, true>(params, warps, count, stage);
}

// Both axes' precisions of each image that takes the exact uint8 antialias, once per image
// (one block of 256 threads each) before the launch, written into its parameters: otherwise
// every block of the launch recomputes them (a pass over all the outputs in double
// precision) before its own pixels. Then its table of spans and weights, per output column
// and row, at those precisions.
extern "C" __global__ void gm_aa_exact_prepare(GmFusedParams* params, int count) {
    int i = blockIdx.z;
    if (i >= count) return;
    __shared__ GmFusedParams sp;
    int tid = threadIdx.x;
    if (tid < (int)(sizeof(GmFusedParams) / 4)) {
        ((int*)&sp)[tid] = ((const int*)&params[i])[tid];
    }
    __syncthreads();
    // The same for every thread of the block (shared), so the barriers inside are reached by all.
    if (sp.interp != 3 || sp.aa_exact != 1) return;
    aa_exact_precisions(&sp);
    if (tid == 0) params[i].aa_exact = sp.aa_exact;
    int px = (sp.aa_exact >> 8) & 255, py = (sp.aa_exact >> 16) & 255;
    int* columns = (int*)sp.aa_taps;
    int* rows = columns + (long long)sp.out_w * sp.aa_stride_x;
    aa_exact_table((int)sp.crop_w, sp.out_w, px, sp.aa_stride_x, columns, tid, blockDim.x);
    aa_exact_table((int)sp.crop_h, sp.out_h, py, sp.aa_stride_y, rows, tid, blockDim.x);
}

// Equalize's lookup tables, after the histogram pre-pass of `stage`: one block of 256 threads
// per image (grid z) turns each channel's bins into torchvision's equalize_image table in
// place: the cumulative count before each value (an inclusive scan), in steps of (pixels not
// of the largest value) / 255, rounded; the identity when that step is 0.
extern "C" __global__ void gm_colour_lut(const GmFusedParams* __restrict__ params, int count, int stage) {
    int i = blockIdx.z;
    if (i >= count) return;
    __shared__ GmFusedParams sp;
    __shared__ unsigned int cum[256];
    __shared__ int top;
    load_params(params, i, &sp);
    const GmFusedParams& p = sp;
    int offset;
    if (stats_op_at(p, stage, &offset) != GM_OP_EQUALIZE) return;
    int t = threadIdx.x;
    for (int c = 0; c < 3; ++c) {
        unsigned int* bins = (unsigned int*)((unsigned long long*)p.stats + offset) + c * 256;
        unsigned int n = bins[t];
        cum[t] = n;
        if (t == 0) top = 0;
        __syncthreads();
        if (n > 0) atomicMax(&top, t);
        for (int d = 1; d < 256; d <<= 1) {
            unsigned int add = t >= d ? cum[t - d] : 0u;
            __syncthreads();
            cum[t] += add;
            __syncthreads();
        }
        unsigned int step = (cum[255] - bins[top]) / 255u;
        unsigned int before = t > 0 ? cum[t - 1] : 0u;
        unsigned int lut = step == 0 ? (unsigned int)t : (t == 0 ? 0u : min((before + step / 2) / step, 255u));
        __syncthreads();  // every thread has read bins[top] and cum
        bins[t] = lut;
        __syncthreads();  // before the next channel reuses cum and top
    }
}
