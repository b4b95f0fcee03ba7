/* Requests in flight per bucket (logan.answer.in_flight), the requests in any order.

   The numpy form in in_flight.py sorts the requests by start, then searches every start
   among the sorted ends: on 10 M requests the sort alone is most of the time, even for a
   store's rows, which come in long runs nearly in start order. Here nothing is sorted
   whole:
   - the mean needs no order: each request adds its time to the buckets it crosses (its
     head to the one it starts in, its tail to the one it ends in, the whole width to each
     one between, kept as a difference array), in integers: exact;
   - the most needs the order of the starts and ends inside each bucket only. Each start
     and end goes to its bucket (a counting sort), each bucket's events are sorted by their
     offset in the bucket (a radix sort of 11-bit digits; an insertion sort for a few), and
     walked up from the level at the bucket's start: the starts before it less the ends by
     it. At one instant the ends come first (a request is in flight over [start, end)).

   sweep(start, end, lo, width, most, area)
     start, end: int64[n] microseconds, in any order, every start in [lo, lo + width *
                 buckets) (end <= start: never in flight)
     most:       int64[buckets], written: the most requests in flight at any instant of the
                 bucket
     area:       float64[buckets], written: the microseconds of all requests' time inside
                 the bucket (the time-weighted mean in flight is area / width)
   Both forms give the same numbers (tests/test_timeline.py holds them to a brute force). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIGIT 11
#define MASK ((1 << DIGIT) - 1)
#define FEW 64 /* a bucket with no more events than this is sorted by insertion */

/* An event's key: its offset in its bucket, doubled, plus 1 for a start. A start is at
   [0, width), an end at (0, width] (an end on an edge closes the bucket before it), so at
   one instant an end sorts before a start, and the key is at most 2 * width. */
typedef Py_ssize_t Counts[4][1 << DIGIT];

static void sort_keys(uint64_t *a, uint64_t *tmp, Py_ssize_t n, int passes, Counts *count) {
    if (n <= FEW) {
        for (Py_ssize_t i = 1; i < n; i++) {
            uint64_t v = a[i];
            Py_ssize_t j = i;
            for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    /* Every digit's counts in one read, into four tables taken in turn: a bucket's keys
       come nearly in order, so the next key's high digit is mostly this one's, and one
       table would make each count wait for the one before it to be stored. */
    memset(count, 0, (size_t)passes * sizeof *count);
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int p = 0; p < passes; p++)
            for (int j = 0; j < 4; j++) count[p][j][(a[i + j] >> (p * DIGIT)) & MASK]++;
    for (; i < n; i++)
        for (int p = 0; p < passes; p++) count[p][0][(a[i] >> (p * DIGIT)) & MASK]++;
    uint64_t *from = a, *to = tmp;
    for (int p = 0; p < passes; p++) {
        int shift = p * DIGIT;
        Py_ssize_t at = 0, *c = count[p][0];
        for (int d = 0; d < (1 << DIGIT); d++) {
            Py_ssize_t here = c[d] + count[p][1][d] + count[p][2][d] + count[p][3][d];
            c[d] = at;
            at += here;
        }
        for (Py_ssize_t k = 0; k < n; k++) to[c[(from[k] >> shift) & MASK]++] = from[k];
        uint64_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != a) memcpy(a, from, (size_t)n * sizeof *a);
}

/* (t - lo) / width for t >= lo, by a multiplication: a 64-bit division costs tens of
   cycles, and there are four per request. The double's rounding is put right after. */
static inline int64_t bucket_of(int64_t t, int64_t lo, int64_t width, double per) {
    int64_t d = t - lo, k = (int64_t)((double)d * per);
    if (k * width > d) k--;
    else if ((k + 1) * width <= d) k++;
    return k;
}

/* The whole computation, without the GIL; -1 when out of memory. */
static int in_flight(const int64_t *start, const int64_t *end, Py_ssize_t n, int64_t lo, int64_t width,
                     Py_ssize_t buckets, int64_t *most, double *area) {
    int64_t hi = lo + width * (int64_t)buckets;
    double per = 1.0 / (double)width;
    /* per bucket: events (starts and ends in it), starts, ends, time, difference of crossings */
    Py_ssize_t *at = calloc((size_t)buckets + 1, sizeof *at);
    int64_t *starts = calloc((size_t)buckets, sizeof *starts), *ends = calloc((size_t)buckets, sizeof *ends);
    int64_t *time = calloc((size_t)buckets, sizeof *time), *crossing = calloc((size_t)buckets + 1, sizeof *crossing);
    uint64_t *keys = NULL, *tmp = NULL;
    Counts *count = malloc((64 / DIGIT + 1) * sizeof *count);
    int status = -1;
    if (!at || !starts || !ends || !time || !crossing || !count) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = start[i], e = end[i];
        if (e <= s) continue;
        int64_t k0 = bucket_of(s, lo, width, per), e_in = e < hi ? e : hi, k1 = bucket_of(e_in - 1, lo, width, per);
        starts[k0]++;
        if (e <= hi) ends[k1]++;
        if (k0 == k1) {
            time[k0] += e_in - s;
        } else {
            time[k0] += lo + (k0 + 1) * width - s;
            time[k1] += e_in - (lo + k1 * width);
            crossing[k0 + 1]++;
            crossing[k1]--;
        }
    }
    Py_ssize_t total = 0, widest = 0;
    for (Py_ssize_t k = 0; k < buckets; k++) {
        Py_ssize_t events = (Py_ssize_t)(starts[k] + ends[k]);
        at[k] = total;
        total += events;
        if (events > widest) widest = events;
    }
    at[buckets] = total;
    keys = malloc((size_t)(total ? total : 1) * sizeof *keys);
    tmp = malloc((size_t)(widest ? widest : 1) * sizeof *tmp);
    if (!keys || !tmp) goto done;
    Py_ssize_t *fill = calloc((size_t)buckets, sizeof *fill);
    if (!fill) goto done;
    memcpy(fill, at, (size_t)buckets * sizeof *fill);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = start[i], e = end[i];
        if (e <= s) continue;
        int64_t k0 = bucket_of(s, lo, width, per);
        keys[fill[k0]++] = (uint64_t)(s - (lo + k0 * width)) << 1 | 1;
        if (e <= hi) {
            int64_t k1 = bucket_of(e - 1, lo, width, per);
            keys[fill[k1]++] = (uint64_t)(e - (lo + k1 * width)) << 1;
        }
    }
    free(fill);
    int bits = 0;
    while (bits < 64 && ((uint64_t)2 * (uint64_t)width) >> bits) bits++;
    int passes = (bits + DIGIT - 1) / DIGIT;
    int64_t level = 0, crossed = 0;
    for (Py_ssize_t k = 0; k < buckets; k++) {
        uint64_t *a = keys + at[k];
        Py_ssize_t m = at[k + 1] - at[k];
        sort_keys(a, tmp, m, passes, count);
        int64_t now = level, top = level;
        for (Py_ssize_t i = 0; i < m; i++) {
            if (a[i] & 1) {
                if (++now > top) top = now;
            } else {
                now--;
            }
        }
        most[k] = top;
        level += starts[k] - ends[k];
        crossed += crossing[k];
        area[k] = (double)(time[k] + crossed * width);
    }
    status = 0;
done:
    free(at);
    free(starts);
    free(ends);
    free(time);
    free(crossing);
    free(keys);
    free(tmp);
    free(count);
    return status;
}

static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, Py_ssize_t n, int writable) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (b->itemsize != itemsize || (n >= 0 && b->len / b->itemsize != n)) {
        PyErr_SetString(PyExc_ValueError, "sweep: arrays of int64 (float64 area) and matching lengths expected");
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static PyObject *sweep(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_start, *o_end, *o_most, *o_area;
    long long lo, width;
    if (!PyArg_ParseTuple(args, "OOLLOO", &o_start, &o_end, &lo, &width, &o_most, &o_area)) return NULL;
    Py_buffer b_start, b_end, b_most, b_area;
    PyObject *result = NULL;
    if (get(o_start, &b_start, 8, -1, 0) < 0) return NULL;
    Py_ssize_t n = b_start.len / 8;
    if (get(o_end, &b_end, 8, n, 0) < 0) goto e1;
    if (get(o_most, &b_most, 8, -1, 1) < 0) goto e2;
    Py_ssize_t buckets = b_most.len / 8;
    if (get(o_area, &b_area, 8, buckets, 1) < 0) goto e3;

    const int64_t *start = b_start.buf, *end = b_end.buf;
    int64_t *most = b_most.buf;
    int bad = width <= 0 || buckets == 0 || width > (INT64_MAX / 4) / (buckets ? (int64_t)buckets : 1);
    int64_t hi = bad ? 0 : lo + width * (int64_t)buckets;
    for (Py_ssize_t i = 0; i < n && !bad; i++) bad = start[i] < lo || start[i] >= hi;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "sweep: every start must be inside the buckets");
        goto e4;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = in_flight(start, end, n, lo, width, buckets, most, b_area.buf);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        PyErr_NoMemory();
        goto e4;
    }
    result = Py_None;
    Py_INCREF(result);
e4:
    PyBuffer_Release(&b_area);
e3:
    PyBuffer_Release(&b_most);
e2:
    PyBuffer_Release(&b_end);
e1:
    PyBuffer_Release(&b_start);
    return result;
}

static PyMethodDef methods[] = {
    {"sweep", sweep, METH_VARARGS, "sweep(start, end, lo, width, most, area): see _sweep.c"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sweep", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sweep(void) { return PyModule_Create(&module); }
