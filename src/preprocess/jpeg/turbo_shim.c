/*
 * MJPEG decoding through libjpeg-turbo with the work it lets us skip:
 * DCT-domain scaling (1/1, 1/2, 1/4, 1/8), a column window
 * (jpeg_crop_scanline) and a row window (jpeg_skip_scanlines before it,
 * nothing decoded after it). Called from Rust (turbo.rs); every libjpeg
 * error longjmps back here and becomes a status and a message, so neither
 * exit() nor a Rust panic can happen across the boundary.
 */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#ifndef LIBJPEG_TURBO_VERSION_NUMBER
#error "the libjpeg-turbo feature needs libjpeg-turbo (>= 1.5, for jpeg_crop_scanline and jpeg_skip_scanlines), not another libjpeg"
#endif

#define HX_MSG_LEN 200

/* The window actually decoded and, on failure, why not. */
struct hx_jpeg_result {
    uint32_t x, y, width, height; /* in scaled pixels; rows are width * 3 bytes apart */
    uint32_t image_width, image_height; /* scaled size of the whole image */
    uint32_t warnings;            /* benign warnings seen (metadata only) */
    char message[HX_MSG_LEN];
};

/* turbo.rs mirrors this layout. */
_Static_assert(sizeof(struct hx_jpeg_result) == 7 * 4 + HX_MSG_LEN, "hx_jpeg_result layout");

struct hx_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    struct hx_jpeg_result *result;
};

static void hx_error_exit(j_common_ptr cinfo)
{
    struct hx_error *err = (struct hx_error *)cinfo->err;
    char buf[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buf);
    snprintf(err->result->message, HX_MSG_LEN, "%s", buf);
    longjmp(err->jump, 1);
}

/* Warnings about the entropy-coded data (truncation, bad codes) mean the
 * picture is wrong: they are errors here. Warnings about metadata are counted. */
static void hx_emit_message(j_common_ptr cinfo, int msg_level)
{
    struct hx_error *err = (struct hx_error *)cinfo->err;
    if (msg_level >= 0)
        return; /* trace messages */
    switch (cinfo->err->msg_code) {
    case JWRN_EXTRANEOUS_DATA:
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:
    case JWRN_BOGUS_ICC:
        err->result->warnings++;
        return;
    default:
        hx_error_exit(cinfo);
    }
}

static void hx_output_message(j_common_ptr cinfo)
{
    (void)cinfo; /* never print from a library */
}

uint32_t hx_jpeg_turbo_version(void)
{
    return LIBJPEG_TURBO_VERSION_NUMBER;
}

/*
 * Decodes the window (x, y, width, height), given in pixels of the image
 * scaled by 1/scale_denom, into `out` as packed RGB rows of the decoded
 * width (which jpeg_crop_scanline may widen to the left to an iMCU
 * boundary; `result` says what was decoded). The image must be
 * expect_width x expect_height. Returns 0 on success, -1 with
 * result->message set otherwise.
 */
int hx_jpeg_decode_window(const uint8_t *data, size_t len, uint32_t expect_width,
                          uint32_t expect_height, uint32_t scale_denom, uint32_t x,
                          uint32_t y, uint32_t width, uint32_t height, uint8_t *out,
                          size_t out_len, struct hx_jpeg_result *result)
{
    struct jpeg_decompress_struct cinfo;
    struct hx_error err;
    memset(result, 0, sizeof *result);
    if (len == 0 || len > (size_t)(unsigned long)-1) {
        snprintf(result->message, HX_MSG_LEN, "empty or oversized JPEG (%zu bytes)", len);
        return -1;
    }
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = hx_error_exit;
    err.pub.emit_message = hx_emit_message;
    err.pub.output_message = hx_output_message;
    err.result = result;
    if (setjmp(err.jump)) {
        /* Only cinfo (initialised before any longjmp can happen) is touched here. */
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)len);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.image_width != expect_width || cinfo.image_height != expect_height) {
        snprintf(result->message, HX_MSG_LEN, "JPEG is %ux%u, the stream is %ux%u",
                 (unsigned)cinfo.image_width, (unsigned)cinfo.image_height,
                 (unsigned)expect_width, (unsigned)expect_height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    cinfo.scale_num = 1;
    cinfo.scale_denom = scale_denom;
    cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&cinfo);
    result->image_width = cinfo.output_width;
    result->image_height = cinfo.output_height;
    if (cinfo.output_components != 3 || width == 0 || height == 0 ||
        x > cinfo.output_width || width > cinfo.output_width - x ||
        y > cinfo.output_height || height > cinfo.output_height - y) {
        snprintf(result->message, HX_MSG_LEN,
                 "window %ux%u+%u+%u is outside the %ux%u scaled image",
                 width, height, x, y, (unsigned)cinfo.output_width,
                 (unsigned)cinfo.output_height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    JDIMENSION xoffset = x, cropped = width;
    if (xoffset != 0 || cropped != cinfo.output_width)
        jpeg_crop_scanline(&cinfo, &xoffset, &cropped);
    size_t stride = (size_t)cinfo.output_width * 3;
    if (stride * height > out_len) {
        snprintf(result->message, HX_MSG_LEN,
                 "output buffer of %zu bytes is short of %zu", out_len, stride * height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    if (y > 0 && jpeg_skip_scanlines(&cinfo, y) != y) {
        snprintf(result->message, HX_MSG_LEN, "could not skip %u rows", y);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    uint32_t done = 0;
    while (done < height) {
        JSAMPROW rows[16];
        uint32_t n = height - done < 16 ? height - done : 16;
        for (uint32_t i = 0; i < n; i++)
            rows[i] = out + (size_t)(done + i) * stride;
        JDIMENSION got = jpeg_read_scanlines(&cinfo, rows, n);
        if (got == 0) {
            snprintf(result->message, HX_MSG_LEN, "decoder stopped at row %u", y + done);
            jpeg_destroy_decompress(&cinfo);
            return -1;
        }
        done += got;
    }
    result->x = xoffset;
    result->y = y;
    result->width = cinfo.output_width;
    result->height = height;
    /* Rows below the window are never decoded. */
    jpeg_destroy_decompress(&cinfo);
    return 0;
}
