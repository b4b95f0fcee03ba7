/* Requests in flight per bucket in one sweep (logan.answer.in_flight).

   The numpy form in in_flight.py needs the ends sorted and a binary search of every start
   among them: on 10 M requests that is most of the time. Here the starts are walked in
   order once, the ends of the requests in flight kept in a min-heap (as many as are in
   flight at once, a few hundred), so the cost is n log(in flight) with no sort of the ends.

   The starts may come in pieces (a store's requests streamed in order of start, a batch at
   a time): what the sweep carries from one piece to the next is the heap, the instant it
   has reached and the buckets' sums, never the requests, so its memory does not grow with
   the log.

   s = Sweeper(lo, width, buckets)
   s.feed(start, end)   int64[n] microseconds each, start sorted and not before the last
                        start fed, every start in [lo, lo + width * buckets)
                        (end < start counts as end == start: never in flight)
   s.finish(most, area) writes, and the sweeper is done:
     most:  int64[buckets], the most requests in flight at any instant of the bucket
            (a request is in flight over [start, end))
     area:  float64[buckets], the microseconds of all requests' time inside the bucket
            (the time-weighted mean in flight is area / width)
   Both forms give the same numbers (tests/test_timeline.py holds them to a brute force). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    int64_t *heap; /* ends of the requests in flight, smallest first */
    Py_ssize_t size, cap;
    int64_t now, lo, width, buckets;
    int64_t bucket;     /* the last bucket whose level at its start is written */
    int64_t last_start; /* the last start fed: the next piece starts at or after it */
    int64_t *most;
    double *area;
    int done;
} Sweeper;

static int push(Sweeper *w, int64_t end) {
    if (w->size == w->cap) {
        Py_ssize_t cap = w->cap ? 2 * w->cap : 1024;
        int64_t *grown = realloc(w->heap, (size_t)cap * sizeof(int64_t));
        if (!grown) return -1;
        w->heap = grown;
        w->cap = cap;
    }
    Py_ssize_t i = w->size++;
    while (i > 0 && w->heap[(i - 1) / 2] > end) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = end;
    return 0;
}

static void pop(Sweeper *w) {
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
static void advance(Sweeper *w, int64_t to) {
    while (w->now < to) {
        int64_t k = (w->now - w->lo) / w->width;
        int64_t edge = w->lo + (k + 1) * w->width;
        int64_t stop = to < edge ? to : edge;
        w->area[k] += (double)w->size * (double)(stop - w->now);
        w->now = stop;
    }
}

/* Every request that ended by `t` leaves (a request is no longer in flight at its end). */
static void end_by(Sweeper *w, int64_t t) {
    while (w->size > 0 && w->heap[0] <= t) {
        advance(w, w->heap[0]);
        pop(w);
    }
    advance(w, t);
}

/* The level at the start of every bucket up to and including k. */
static void reach_bucket(Sweeper *w, int64_t k) {
    while (w->bucket < k) {
        w->bucket++;
        end_by(w, w->lo + w->bucket * w->width);
        w->most[w->bucket] = w->size;
    }
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

static int Sweeper_init(Sweeper *w, PyObject *args, PyObject *kwds) {
    (void)kwds;
    long long lo, width, buckets;
    if (!PyArg_ParseTuple(args, "LLL", &lo, &width, &buckets)) return -1;
    if (width <= 0 || buckets <= 0) {
        PyErr_SetString(PyExc_ValueError, "sweep: a positive width and at least one bucket expected");
        return -1;
    }
    free(w->most);
    free(w->area);
    free(w->heap);
    w->heap = NULL;
    w->size = w->cap = 0;
    w->now = w->lo = lo;
    w->width = width;
    w->buckets = buckets;
    w->bucket = -1;
    w->last_start = lo;
    w->most = calloc((size_t)buckets, sizeof(int64_t));
    w->area = calloc((size_t)buckets, sizeof(double));
    w->done = 0;
    if (!w->most || !w->area) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void Sweeper_dealloc(Sweeper *w) {
    free(w->heap);
    free(w->most);
    free(w->area);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyObject *Sweeper_feed(Sweeper *w, PyObject *args) {
    PyObject *o_start, *o_end, *result = NULL;
    if (!PyArg_ParseTuple(args, "OO", &o_start, &o_end)) return NULL;
    if (w->done || !w->most) {
        PyErr_SetString(PyExc_ValueError, "sweep: this sweeper is finished");
        return NULL;
    }
    Py_buffer b_start, b_end;
    if (get(o_start, &b_start, 8, -1, 0) < 0) return NULL;
    Py_ssize_t n = b_start.len / 8;
    if (get(o_end, &b_end, 8, n, 0) < 0) goto e1;
    const int64_t *start = b_start.buf, *end = b_end.buf;
    int64_t hi = w->lo + w->width * w->buckets, prev = w->last_start;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        bad = start[i] < prev || start[i] >= hi;
        prev = start[i];
    }
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "sweep: starts must be sorted and inside the buckets");
        goto e2;
    }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        int64_t t = start[i], k = (t - w->lo) / w->width;
        reach_bucket(w, k);
        end_by(w, t);
        if (end[i] > t) failed = push(w, end[i]) < 0;
        if (w->size > w->most[k]) w->most[k] = w->size; /* the level just after t */
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto e2;
    }
    if (n) w->last_start = start[n - 1];
    result = Py_None;
    Py_INCREF(result);
e2:
    PyBuffer_Release(&b_end);
e1:
    PyBuffer_Release(&b_start);
    return result;
}

static PyObject *Sweeper_finish(Sweeper *w, PyObject *args) {
    PyObject *o_most, *o_area, *result = NULL;
    if (!PyArg_ParseTuple(args, "OO", &o_most, &o_area)) return NULL;
    if (w->done || !w->most) {
        PyErr_SetString(PyExc_ValueError, "sweep: this sweeper is finished");
        return NULL;
    }
    Py_buffer b_most, b_area;
    if (get(o_most, &b_most, 8, w->buckets, 1) < 0) return NULL;
    if (get(o_area, &b_area, 8, w->buckets, 1) < 0) goto e1;
    reach_bucket(w, w->buckets - 1);
    end_by(w, w->lo + w->width * w->buckets);
    memcpy(b_most.buf, w->most, (size_t)w->buckets * sizeof(int64_t));
    memcpy(b_area.buf, w->area, (size_t)w->buckets * sizeof(double));
    w->done = 1;
    result = Py_None;
    Py_INCREF(result);
    PyBuffer_Release(&b_area);
e1:
    PyBuffer_Release(&b_most);
    return result;
}

static PyMethodDef Sweeper_methods[] = {
    {"feed", (PyCFunction)Sweeper_feed, METH_VARARGS, "feed(start, end): the next requests, in order of start"},
    {"finish", (PyCFunction)Sweeper_finish, METH_VARARGS, "finish(most, area): the buckets' answers"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SweeperType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "logan.answer._sweep.Sweeper",
    .tp_basicsize = sizeof(Sweeper),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sweeper(lo, width, buckets): requests in flight per bucket, fed in order of start",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Sweeper_init,
    .tp_dealloc = (destructor)Sweeper_dealloc,
    .tp_methods = Sweeper_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sweep", NULL, -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sweep(void) {
    if (PyType_Ready(&SweeperType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&SweeperType);
    if (PyModule_AddObject(m, "Sweeper", (PyObject *)&SweeperType) < 0) {
        Py_DECREF(&SweeperType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
