// YCbCr planes of decoded JPEGs to RGB, the way libjpeg-turbo's "fancy upsampling" and
// zune-jpeg do it, with EXIF orientation applied on the way.
//
// nvJPEG replicates each subsampled chroma sample over its 2x2 (or 2x1, 1x2) block; CPU
// decoders interpolate with a triangle filter, (3 * nearer + farther + 2) / 4, vertically
// first and then horizontally, each step rounded. On images with sharp colour edges the two
// differ by several dB, so the decoder asks nvJPEG for the planes (NVJPEG_OUTPUT_YUV) and
// finishes here. The colour conversion is zune-jpeg's BT.601 full-range one in 14-bit fixed
// point, so a GPU image differs from the CPU reference only by nvJPEG's IDCT rounding.
//
// One launch converts a whole batch: blockIdx.y picks the image, blocks stride over its output
// rows and threads over a row's pixels (no per-pixel division: the kernel is on the batch's
// critical path). Compiled to jpeg_color.ptx by `cargo xtask ptx`; the CPU twin is
// `gm_codec::jpeg::color::ycc_to_rgb_host`.

// Must match `ColorJob` in src/jpeg/color.rs (64 bytes).
struct ColorJob {
    unsigned long long y, cb, cr, out;
    unsigned int y_pitch, c_pitch;
    unsigned int width, height;      // as stored in the file, before orientation
    unsigned int c_width, c_height;  // chroma plane size
    unsigned int flags;              // hs | vs << 4 | orientation << 8 | planar << 16 | grey << 17
    unsigned int pad;
};

__device__ __forceinline__ int clamp_index(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

// One chroma sample at stored pixel (sx, sy), upsampled by (hs, vs) in {1, 2}.
__device__ __forceinline__ int chroma_at(const unsigned char* __restrict__ p, unsigned int pitch,
                                         int cw, int ch, int hs, int vs, int sx, int sy) {
    int cx = clamp_index(sx >> (hs - 1), cw - 1);
    int cy = clamp_index(sy >> (vs - 1), ch - 1);
    // The nearer neighbour's side: above/left for even output positions, below/right for odd.
    int ny = vs == 2 ? clamp_index((sy & 1) ? cy + 1 : cy - 1, ch - 1) : cy;
    int nx = hs == 2 ? clamp_index((sx & 1) ? cx + 1 : cx - 1, cw - 1) : cx;
    const unsigned char* row = p + (unsigned long long)cy * pitch;
    const unsigned char* far_row = p + (unsigned long long)ny * pitch;
    int a = row[cx], b = row[nx];
    if (vs == 2) {
        a = (3 * a + far_row[cx] + 2) >> 2;
        b = (3 * b + far_row[nx] + 2) >> 2;
    }
    return hs == 2 ? (3 * a + b + 2) >> 2 : a;
}

__device__ __forceinline__ unsigned char clamp_u8(int v) {
    return (unsigned char)(v < 0 ? 0 : (v > 255 ? 255 : v));
}

extern "C" __global__ void gm_jpeg_ycc_to_rgb(const ColorJob* __restrict__ jobs) {
    const ColorJob j = jobs[blockIdx.y];
    const int hs = j.flags & 0xF, vs = (j.flags >> 4) & 0xF, o = (j.flags >> 8) & 0xFF;
    const bool planar = (j.flags >> 16) & 1, grey = (j.flags >> 17) & 1;
    const int w = (int)j.width, h = (int)j.height;
    const bool swap = o >= 5 && o <= 8;
    const int ow = swap ? h : w, oh = swap ? w : h;
    const unsigned long long n = (unsigned long long)ow * oh;
    const unsigned char* y_plane = (const unsigned char*)j.y;
    unsigned char* out = (unsigned char*)j.out;
    for (int oy = blockIdx.x; oy < oh; oy += gridDim.x)
    for (int ox = threadIdx.x; ox < ow; ox += blockDim.x) {
        const unsigned long long i = (unsigned long long)oy * ow + ox;
        int sx, sy;
        switch (o) {
            case 2: sx = w - 1 - ox; sy = oy; break;
            case 3: sx = w - 1 - ox; sy = h - 1 - oy; break;
            case 4: sx = ox; sy = h - 1 - oy; break;
            case 5: sx = oy; sy = ox; break;
            case 6: sx = oy; sy = h - 1 - ox; break;
            case 7: sx = w - 1 - oy; sy = h - 1 - ox; break;
            case 8: sx = w - 1 - oy; sy = ox; break;
            default: sx = ox; sy = oy; break;
        }
        const int yv = y_plane[(unsigned long long)sy * j.y_pitch + sx];
        int r = yv, g = yv, b = yv;
        if (!grey) {
            const int cw = (int)j.c_width, ch = (int)j.c_height;
            const int cb = chroma_at((const unsigned char*)j.cb, j.c_pitch, cw, ch, hs, vs, sx, sy) - 128;
            const int cr = chroma_at((const unsigned char*)j.cr, j.c_pitch, cw, ch, hs, vs, sx, sy) - 128;
            const int y0 = yv * 16384 + 8191;
            r = (y0 + cr * 22970) >> 14;
            g = (y0 - cr * 11700 - cb * 5638) >> 14;
            b = (y0 + cb * 29032) >> 14;
        }
        if (planar) {
            out[i] = clamp_u8(r);
            out[n + i] = clamp_u8(g);
            out[2 * n + i] = clamp_u8(b);
        } else {
            out[3 * i] = clamp_u8(r);
            out[3 * i + 1] = clamp_u8(g);
            out[3 * i + 2] = clamp_u8(b);
        }
    }
}
