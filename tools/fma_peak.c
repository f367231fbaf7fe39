/* One core's f32 multiply-add peak, for docs/performance.md#decoder:
 *
 *     cc -O2 -o /tmp/fma_peak tools/fma_peak.c && /tmp/fma_peak
 *
 * Twelve independent 512-bit FMA chains (enough to cover the latency on two pipes),
 * timed in thread CPU time; prints multiply-adds per second. x86-64 with AVX-512F. */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define INIT(i) __m512 a##i = _mm512_set1_ps((float)i);
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, b, c);
#define SUM(i) s += _mm512_reduce_add_ps(a##i);
#define ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f"))) static double gmac_per_s(long n) {
    __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    ALL(INIT)
    double t = cpu_seconds();
    for (long k = 0; k < n; k++) {
        ALL(STEP)
    }
    t = cpu_seconds() - t;
    float s = 0;
    ALL(SUM)
    if (s == 1234.5f) printf("(unlikely sum)\n"); /* keeps the chains live */
    return n * 12.0 * 16 / t / 1e9;
}

int main(void) {
    for (int r = 0; r < 3; r++) printf("f32 FMA peak: %.1f GMAC/s per core\n", gmac_per_s(200000000));
    return 0;
}
