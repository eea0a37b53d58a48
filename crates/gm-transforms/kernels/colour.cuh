// torchvision's uint8 photometric operations on one pixel, for the fused kernel: the twin of
// gm_transforms::colour (colour.rs, hsv.rs); keep the arithmetic identical. Every product and
// sum is an explicit round-to-nearest intrinsic (__fmul_rn, __fadd_rn, __fmaf_rn) because
// NVRTC would otherwise contract a*b+c into FMAs that the CPU twin (and torch) round
// differently, and a truncation to u8 turns such a last-bit difference into a whole step.
// Included by fused.cu after GmFusedParams and sample<INTERP> (sharpness re-samples the
// neighbours).

#define GM_OP_BRIGHTNESS 1
#define GM_OP_CONTRAST 2
#define GM_OP_SATURATION 3
#define GM_OP_HUE 4
#define GM_OP_GRAYSCALE 5
#define GM_OP_SOLARIZE 6
#define GM_OP_POSTERIZE 7
#define GM_OP_INVERT 8
#define GM_OP_AUTOCONTRAST 9
#define GM_OP_EQUALIZE 10
#define GM_OP_SHARPNESS 11

// u64 words of one stats op's sums: contrast uses word 0 (the floored grey's sum),
// autocontrast words 0-2 (the max of 255 - v per channel, so that zeroed words start every
// statistic) and 3-5 (the max of v per channel); equalize 3 x 256 u32 histogram bins,
// turned into its lookup table in place by gm_colour_lut. fused.rs' stats_bytes agrees.
#define GM_STATS_WORDS 8
#define GM_EQUALIZE_WORDS 384

__device__ __forceinline__ float clamp255(float v) { return fminf(fmaxf(v, 0.0f), 255.0f); }
__device__ __forceinline__ float clamp1(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// torchvision's grey: r*0.2989 + g*0.587 + b*0.114, torch's add_(alpha) being an FMA.
__device__ __forceinline__ float grey(const float rgb[3]) {
    return __fmaf_rn(rgb[2], 0.114f, __fmaf_rn(rgb[1], 0.587f, __fmul_rn(rgb[0], 0.2989f)));
}

// torchvision's _blend on uint8: a*ratio + b*(1-ratio), clamped, truncated.
__device__ __forceinline__ float blend(float a, float b, float ratio, float one_minus) {
    return truncf(clamp255(__fmaf_rn(b, one_minus, __fmul_rn(a, ratio))));
}

// Python's x % 1.0: in [0, 1) also for negative x.
__device__ __forceinline__ float remainder1(float x) {
    float m = fmodf(x, 1.0f);
    return m < 0.0f ? __fadd_rn(m, 1.0f) : m;
}

// F.adjust_hue on one pixel: to float, RGB -> HSV (torchvision's _rgb_to_hsv), shift,
// HSV -> RGB (_hsv_to_rgb), then x * 255.999 truncated.
__device__ void shift_hue(float rgb[3], float hue) {
    const float inv255 = (float)(1.0 / 255.0);
    float r = __fmul_rn(rgb[0], inv255), g = __fmul_rn(rgb[1], inv255), b = __fmul_rn(rgb[2], inv255);
    float maxc = fmaxf(fmaxf(r, g), b), minc = fminf(fminf(r, g), b);
    bool eqc = maxc == minc;
    float range = __fsub_rn(maxc, minc);
    float s = __fdiv_rn(range, eqc ? 1.0f : maxc);
    float div = eqc ? 1.0f : range;
    float rc = __fdiv_rn(__fsub_rn(maxc, r), div);
    float gc = __fdiv_rn(__fsub_rn(maxc, g), div);
    float bc = __fdiv_rn(__fsub_rn(maxc, b), div);
    float h;
    if (maxc == r) h = __fsub_rn(bc, gc);
    else if (maxc == g) h = __fsub_rn(__fadd_rn(rc, 2.0f), bc);
    else h = __fsub_rn(__fadd_rn(gc, 4.0f), rc);
    h = fmodf(__fadd_rn(__fmul_rn(h, (float)(1.0 / 6.0)), 1.0f), 1.0f);
    h = remainder1(__fadd_rn(h, hue));
    float v = maxc;
    float h6 = __fmul_rn(h, 6.0f);
    float fi = floorf(h6);
    float f = __fsub_rn(h6, fi);
    float sxf = __fmul_rn(s, f);
    float oms = __fsub_rn(1.0f, s);
    float q = clamp1(__fmul_rn(__fsub_rn(1.0f, sxf), v));
    float t = clamp1(__fmul_rn(__fadd_rn(sxf, oms), v));
    float p = clamp1(__fmul_rn(oms, v));
    int i = ((int)fi % 6 + 6) % 6;
    float out[3];
    switch (i) {
        case 0: out[0] = v; out[1] = t; out[2] = p; break;
        case 1: out[0] = q; out[1] = v; out[2] = p; break;
        case 2: out[0] = p; out[1] = v; out[2] = t; break;
        case 3: out[0] = p; out[1] = q; out[2] = v; break;
        case 4: out[0] = t; out[1] = p; out[2] = v; break;
        default: out[0] = v; out[1] = p; out[2] = q; break;
    }
    const float to_u8 = (float)(255.0 + 1.0 - 1e-3);
    for (int c = 0; c < 3; ++c) rgb[c] = truncf(__fmul_rn(out[c], to_u8));
}

// torchvision's autocontrast_image on uint8, from the channel's min and max over the image.
__device__ __forceinline__ void autocontrast(float rgb[3], const unsigned long long* words) {
    for (int c = 0; c < 3; ++c) {
        float lo = __fsub_rn(255.0f, (float)words[c]), hi = (float)words[3 + c];
        float mn = 0.0f, inv_scale = 1.0f;
        if (hi != lo) {
            mn = lo;
            inv_scale = __fmul_rn(__fsub_rn(hi, lo), (float)(1.0 / 255.0));
        }
        rgb[c] = truncf(clamp255(__fdiv_rn(__fsub_rn(rgb[c], mn), inv_scale)));
    }
}

__device__ __forceinline__ bool is_stats_op(int op) {
    return op == GM_OP_CONTRAST || op == GM_OP_AUTOCONTRAST || op == GM_OP_EQUALIZE;
}

__device__ __forceinline__ int stats_words(int op) {
    return op == GM_OP_EQUALIZE ? GM_EQUALIZE_WORDS : GM_STATS_WORDS;
}

// The code of the image's stage-th stats op (0 if it has fewer) and where its sums start
// (u64 words after p.stats).
__device__ __forceinline__ int stats_op_at(const GmFusedParams& p, int stage, int* offset) {
    *offset = 0;
    for (int k = 0; k < p.n_colour; ++k) {
        int op = p.colour_op[k];
        if (!is_stats_op(op)) continue;
        if (stage-- == 0) return op;
        *offset += stats_words(op);
    }
    return 0;
}

template <bool NEIGHBOURS, int INTERP>
__device__ bool colour_ops(const GmFusedParams& p, float rgb[3], int x, int y, int stop, int limit);

// F.adjust_sharpness at output pixel (x, y), whose value before the op (the image's k-th) is
// rgb: the 3x3 smoothing of the neighbours, each re-sampled and taken through ops 0..k-1 (no
// intermediate image; a plan holds one such op, so this never nests), rounded, then blended;
// the border and images of 2 pixels or fewer across are kept.
template <int INTERP>
__device__ void sharpen(const GmFusedParams& p, float rgb[3], int x, int y, int k, float one_minus) {
    if (x < 1 || y < 1 || x >= p.out_w - 1 || y >= p.out_h - 1) return;
    const float around = (float)(1.0 / 13.0), middle = (float)(5.0 / 13.0);
    float sum[3] = {0.0f, 0.0f, 0.0f};
    for (int yy = y - 1; yy <= y + 1; ++yy) {
        for (int xx = x - 1; xx <= x + 1; ++xx) {
            float t[3] = {rgb[0], rgb[1], rgb[2]};
            float w = middle;
            if (xx != x || yy != y) {
                sample<INTERP>(p, xx, yy, t);
                colour_ops<false, INTERP>(p, t, xx, yy, -1, k);
                w = around;
            }
            for (int c = 0; c < 3; ++c) sum[c] = __fadd_rn(sum[c], __fmul_rn(t[c], w));
        }
    }
    for (int c = 0; c < 3; ++c) {
        float blur = rintf(sum[c]);
        rgb[c] = truncf(clamp255(__fmaf_rn(__fsub_rn(blur, rgb[c]), one_minus, rgb[c])));
    }
}

// Applies the image's colour ops (the first `limit`, or all when limit < 0) to rgb, the
// geometry's value at output pixel (x, y), after rounding it to u8 as torchvision's uint8
// geometry does. With stop >= 0, stops before the stop-th stats op and returns whether the
// image has one (the statistics pre-pass); with stop < 0 applies them, each stats op reading
// its sums from p.stats. NEIGHBOURS: whether a sharpness op may run (false for the
// neighbours it re-samples, and in the point-only kernels, which run only batches without
// one: FusedKernel::run picks them).
template <bool NEIGHBOURS, int INTERP>
__device__ bool colour_ops(const GmFusedParams& p, float rgb[3], int x, int y, int stop, int limit) {
    for (int c = 0; c < 3; ++c) rgb[c] = clamp255(rintf(rgb[c]));
    int stage = 0, offset = 0;
    int n = limit < 0 ? p.n_colour : limit;
    for (int k = 0; k < n; ++k) {
        int op = p.colour_op[k];
        float a = p.colour_a[k], b = p.colour_b[k];
        if (is_stats_op(op)) {
            if (stage == stop) return true;
            const unsigned long long* words = (const unsigned long long*)p.stats + offset;
            if (op == GM_OP_CONTRAST) {
                float mean = (float)((double)words[0] / (double)max(p.out_w * p.out_h, 1));
                for (int c = 0; c < 3; ++c) rgb[c] = blend(rgb[c], mean, a, b);
            } else if (op == GM_OP_AUTOCONTRAST) {
                autocontrast(rgb, words);
            } else {
                const unsigned int* lut = (const unsigned int*)words;
                for (int c = 0; c < 3; ++c) rgb[c] = (float)lut[c * 256 + (int)rgb[c]];
            }
            ++stage;
            offset += stats_words(op);
        } else if (op == GM_OP_BRIGHTNESS) {
            for (int c = 0; c < 3; ++c) rgb[c] = truncf(clamp255(__fmul_rn(rgb[c], a)));
        } else if (op == GM_OP_SATURATION) {
            float g = floorf(grey(rgb));
            for (int c = 0; c < 3; ++c) rgb[c] = blend(rgb[c], g, a, b);
        } else if (op == GM_OP_HUE) {
            shift_hue(rgb, a);
        } else if (op == GM_OP_GRAYSCALE) {
            float g = truncf(grey(rgb));
            rgb[0] = rgb[1] = rgb[2] = g;
        } else if (op == GM_OP_SOLARIZE) {
            for (int c = 0; c < 3; ++c) rgb[c] = rgb[c] >= a ? __fsub_rn(255.0f, rgb[c]) : rgb[c];
        } else if (op == GM_OP_POSTERIZE) {
            int mask = (0xff00 >> (int)a) & 0xff;
            for (int c = 0; c < 3; ++c) rgb[c] = (float)((int)rgb[c] & mask);
        } else if (op == GM_OP_INVERT) {
            for (int c = 0; c < 3; ++c) rgb[c] = __fsub_rn(255.0f, rgb[c]);
        } else if (op == GM_OP_SHARPNESS) {
            if constexpr (NEIGHBOURS) sharpen<INTERP>(p, rgb, x, y, k, b);
        }
    }
    return stop < 0;
}
