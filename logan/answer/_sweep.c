/* Requests in flight per bucket in one sweep (logan.answer.in_flight).

   The numpy form in in_flight.py needs the ends sorted and a binary search of every start
   among them: on 10 M requests that is most of the time. Here the starts are walked in
   order once, the ends of the requests in flight kept in a min-heap (as many as are in
   flight at once, a few hundred), so the cost is n log(in flight) with no sort of the ends.

   sweep(start, end, lo, width, most, area)
     start, end: int64[n] microseconds, start sorted, every start in [lo, lo + width * buckets)
                 (end < start counts as end == start: never in flight)
     most:       int64[buckets], written: the most requests in flight at any instant of the
                 bucket (a request is in flight over [start, end))
     area:       float64[buckets], written: the microseconds of all requests' time inside
                 the bucket (the time-weighted mean in flight is area / width)
   Both forms give the same numbers (tests/test_timeline.py holds them to a brute force). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int64_t *heap; /* ends of the requests in flight, smallest first */
    Py_ssize_t size;
    int64_t now, lo, width, buckets;
    double *area;
} Sweep;

static void push(Sweep *w, int64_t end) {
    Py_ssize_t i = w->size++;
    while (i > 0 && w->heap[(i - 1) / 2] > end) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = end;
}

static void pop(Sweep *w) {
    int64_t last = w->heap[--w->size];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= w->size) break;
        if (c + 1 < w->size && w->heap[c + 1] < w->heap[c]) c++;
        if (w->heap[c] >= last) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    w->heap[i] = last;
}

/* Time moves on to `to`: the requests in flight add their time to each bucket crossed. */
static void advance(Sweep *w, int64_t to) {
    while (w->now < to) {
        int64_t k = (w->now - w->lo) / w->width;
        int64_t edge = w->lo + (k + 1) * w->width;
        int64_t stop = to < edge ? to : edge;
        w->area[k] += (double)w->size * (double)(stop - w->now);
        w->now = stop;
    }
}

/* Every request that ended by `t` leaves (a request is no longer in flight at its end). */
static void end_by(Sweep *w, int64_t t) {
    while (w->size > 0 && w->heap[0] <= t) {
        advance(w, w->heap[0]);
        pop(w);
    }
    advance(w, t);
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
    int64_t hi = lo + width * (int64_t)buckets;
    int bad = width <= 0;
    for (Py_ssize_t i = 0; i < n && !bad; i++)
        bad = start[i] < lo || start[i] >= hi || (i && start[i] < start[i - 1]);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "sweep: starts must be sorted and inside the buckets");
        goto e4;
    }
    Sweep w = {malloc((size_t)(n ? n : 1) * 8), 0, lo, lo, width, buckets, b_area.buf};
    if (!w.heap) {
        PyErr_NoMemory();
        goto e4;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < buckets; k++) w.area[k] = 0;
    int64_t bucket = -1; /* the last bucket whose level at its start is written */
    for (Py_ssize_t i = 0; i <= n; i++) {
        int64_t k = i < n ? (start[i] - lo) / width : buckets;
        while (bucket < k && bucket + 1 < buckets) { /* the level at each bucket's start */
            bucket++;
            end_by(&w, lo + bucket * width);
            most[bucket] = w.size;
        }
        if (i == n) break;
        int64_t t = start[i];
        end_by(&w, t);
        for (; i < n && start[i] == t; i++) /* every start at t, then the level after them */
            if (end[i] > t) push(&w, end[i]);
        i--;
        if (w.size > most[k]) most[k] = w.size;
    }
    end_by(&w, hi);
    Py_END_ALLOW_THREADS
    free(w.heap);
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
