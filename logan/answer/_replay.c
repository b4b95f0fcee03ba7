/* The cache replay of logan.answer.cache_sim: one pass over the requests in start order.

   Whether a request is a hit depends on when the previous miss of its key ended, which
   depended on the one before: a recursion a window function cannot express, and a bounded
   LRU is sequential by nature. So this one loop is compiled; everything around it (keys,
   workers, sorting, sums) is vectorised in DuckDB and numpy.

   replay(slot, start, end, size, n_workers, ttl, coalesce, revalidate_us, max_objects,
          max_bytes, outcome)
     slot:    int64[n], the cache entry a request reads: worker * keys + key, in [0, slots)
     start, end: int64[n] microseconds, requests in start order; end >= start
     size:    int64[n] bytes of the answer (for max_bytes)
     outcome: int8[n], written: 0 miss, 1 hit on a fresh copy, 2 hit that waited for a fill
              in flight (coalesced), 3 revalidated (a 304 from the backend at revalidate_us)
   Worker of a slot: slot / (slots / n_workers). ttl and costs in microseconds;
   revalidate_us < 0: no revalidation; max_objects/max_bytes 0: unbounded (per worker).

   A copy is filled when the miss that fetched it ends and stays fresh for ttl. With
   coalesce 1, a request arriving while the fill is in flight waits for it (a hit); with 0,
   it goes to the backend too, and the key is fresh from the first fill that completes;
   with 2, only the first fill of a key is waited for, refills after expiry are not (nginx's
   proxy_cache_lock without proxy_cache_use_stale updating). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define NONE INT64_MIN

typedef struct {
    int64_t *fill_end;     /* per slot: end of the fill that made the copy (NONE: no copy) */
    int64_t *pending;      /* per slot: latest in-flight backend request (index), -1 none */
    int64_t *next_pending; /* per request: the slot's in-flight request before it */
    int64_t *pending_end;  /* per request: when its backend answer ends */
    int64_t *obj_size;     /* per slot: bytes held */
    int64_t *prev, *next;  /* per slot: LRU list links (-1 none) */
    int64_t *head, *tail, *count, *bytes; /* per worker: LRU list (head: most recent) */
    char *listed;          /* per slot: in its worker's LRU list */
    int64_t max_objects, max_bytes;
} State;

static void lru_unlink(State *s, int64_t slot, int64_t w) {
    int64_t p = s->prev[slot], n = s->next[slot];
    if (p >= 0) s->next[p] = n; else s->head[w] = n;
    if (n >= 0) s->prev[n] = p; else s->tail[w] = p;
    s->prev[slot] = s->next[slot] = -1;
    s->listed[slot] = 0;
    s->count[w] -= 1;
    s->bytes[w] -= s->obj_size[slot];
}

static void lru_push_front(State *s, int64_t slot, int64_t w) {
    s->prev[slot] = -1;
    s->next[slot] = s->head[w];
    if (s->head[w] >= 0) s->prev[s->head[w]] = slot; else s->tail[w] = slot;
    s->head[w] = slot;
    s->listed[slot] = 1;
    s->count[w] += 1;
    s->bytes[w] += s->obj_size[slot];
}

/* A copy enters (or is refreshed in) its worker's LRU, most recent; the least recent leave
   (their copy is gone) until the bounds hold. An object larger than max_bytes is not kept. */
static void lru_store(State *s, int64_t slot, int64_t w, int64_t sz) {
    if (s->listed[slot]) lru_unlink(s, slot, w);
    if (s->max_bytes > 0 && sz > s->max_bytes) {
        s->fill_end[slot] = NONE;
        return;
    }
    s->obj_size[slot] = sz;
    lru_push_front(s, slot, w);
    while ((s->max_objects > 0 && s->count[w] > s->max_objects) ||
           (s->max_bytes > 0 && s->bytes[w] > s->max_bytes)) {
        int64_t victim = s->tail[w];
        lru_unlink(s, victim, w);
        s->fill_end[victim] = NONE;
    }
}

static void lru_touch(State *s, int64_t slot, int64_t w) {
    if (s->listed[slot] && s->head[w] != slot) {
        lru_unlink(s, slot, w);
        lru_push_front(s, slot, w);
    }
}

/* Without coalescing: the in-flight backend requests of a slot that have ended by `t` make
   the copy (the latest of them) and leave the list. They are settled when the key is next
   requested, and the copy enters the LRU (most recent) then. */
static void settle(State *s, int64_t slot, int64_t w, int64_t t, const int64_t *size, int bounded) {
    int64_t *link = &s->pending[slot];
    while (*link >= 0) {
        int64_t i = *link;
        if (s->pending_end[i] <= t) {
            if (s->fill_end[slot] == NONE || s->pending_end[i] > s->fill_end[slot]) {
                s->fill_end[slot] = s->pending_end[i];
                if (bounded) lru_store(s, slot, w, size[i]);
            }
            *link = s->next_pending[i];
        } else {
            link = &s->next_pending[i];
        }
    }
}

static int get(PyObject *o, Py_buffer *b, char kind, Py_ssize_t n, int writable) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    Py_ssize_t want = (kind == 'b') ? 1 : 8;
    if (b->itemsize != want || (n >= 0 && b->len / b->itemsize != n)) {
        PyErr_Format(PyExc_ValueError, "replay: array of %zd-byte items and length %zd expected", want, n);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static PyObject *replay(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_slot, *o_start, *o_end, *o_size, *o_out;
    long long slots, n_workers, ttl, reval, max_objects, max_bytes;
    int coalesce;
    if (!PyArg_ParseTuple(args, "OOOOLLLiLLLO", &o_slot, &o_start, &o_end, &o_size, &slots, &n_workers,
                          &ttl, &coalesce, &reval, &max_objects, &max_bytes, &o_out))
        return NULL;
    if (slots < 0 || n_workers < 1 || slots % n_workers != 0 || ttl < 0 || coalesce < 0 || coalesce > 2) {
        PyErr_SetString(PyExc_ValueError, "replay: slots must be a multiple of n_workers >= 1, ttl >= 0");
        return NULL;
    }
    Py_buffer b_slot, b_start, b_end, b_size, b_out;
    if (get(o_slot, &b_slot, 'q', -1, 0) < 0) return NULL;
    Py_ssize_t n = b_slot.len / 8;
    if (get(o_start, &b_start, 'q', n, 0) < 0) goto e1;
    if (get(o_end, &b_end, 'q', n, 0) < 0) goto e2;
    if (get(o_size, &b_size, 'q', n, 0) < 0) goto e3;
    if (get(o_out, &b_out, 'b', n, 1) < 0) goto e4;

    const int64_t *slot = b_slot.buf, *start = b_start.buf, *end = b_end.buf, *size = b_size.buf;
    int8_t *out = b_out.buf;
    int64_t per_worker = n_workers ? slots / n_workers : 0;
    int bounded = max_objects > 0 || max_bytes > 0;
    State s = {0};
    s.max_objects = max_objects;
    s.max_bytes = max_bytes;
    size_t S = (size_t)(slots ? slots : 1), W = (size_t)n_workers, N = (size_t)(n ? n : 1);
    s.fill_end = malloc(S * 8);
    s.pending = malloc(S * 8);
    s.next_pending = malloc(N * 8);
    s.pending_end = malloc(N * 8);
    s.obj_size = calloc(S, 8);
    s.prev = malloc(S * 8);
    s.next = malloc(S * 8);
    s.listed = calloc(S, 1);
    s.head = malloc(W * 8);
    s.tail = malloc(W * 8);
    s.count = calloc(W, 8);
    s.bytes = calloc(W, 8);
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (slot[i] < 0 || slot[i] >= slots || end[i] < start[i] || (i && start[i] < start[i - 1])) bad = 1;
    if (!s.fill_end || !s.pending || !s.next_pending || !s.pending_end || !s.obj_size || !s.prev ||
        !s.next || !s.listed || !s.head || !s.tail || !s.count || !s.bytes || bad) {
        if (bad) PyErr_SetString(PyExc_ValueError, "replay: a slot out of range, an end before its start "
                                                   "or starts out of order");
        else PyErr_NoMemory();
        goto done;
    }
    /* Only what this replay reads is written: the pages of the rest are never touched, so
       they take no memory (4.85 M keys: 39 MB an array, two replays at once). The pending
       fills are read without coalescing or with it for new keys only; the LRU's links only
       with a bound. */
    for (size_t k = 0; k < S; k++) s.fill_end[k] = NONE;
    if (coalesce != 1)
        for (size_t k = 0; k < S; k++) s.pending[k] = -1;
    if (bounded)
        for (size_t k = 0; k < S; k++) s.prev[k] = s.next[k] = -1;
    for (size_t w = 0; w < W; w++) s.head[w] = s.tail[w] = -1;

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = slot[i], t = start[i], w = k / per_worker;
        if (coalesce != 1) settle(&s, k, w, t, size, bounded);
        int64_t filled = s.fill_end[k];
        if (filled != NONE && t < filled + ttl) {
            /* a fresh copy; or, coalescing, a fill in flight this request waits for */
            out[i] = (t < filled) ? 2 : 1;
            if (bounded) lru_touch(&s, k, w);
            continue;
        }
        int64_t done_at; /* when this request's backend answer ends: the copy's new fill */
        if (filled != NONE && reval >= 0) {
            out[i] = 3; /* the stale copy is revalidated: a 304 at that cost */
            done_at = t + reval;
        } else {
            out[i] = 0;
            done_at = end[i];
        }
        if (coalesce == 1 || (coalesce == 2 && filled == NONE && s.pending[k] < 0)) {
            s.fill_end[k] = done_at; /* requests until done_at wait for it */
            if (bounded) lru_store(&s, k, w, size[i]);
        } else {
            s.pending_end[i] = done_at; /* the copy counts from done_at (settle) */
            s.next_pending[i] = s.pending[k];
            s.pending[k] = i;
            if (bounded && out[i] == 3) lru_touch(&s, k, w);
        }
    }
    Py_END_ALLOW_THREADS
done:
    free(s.fill_end); free(s.pending); free(s.next_pending); free(s.pending_end); free(s.obj_size); free(s.prev);
    free(s.next); free(s.listed); free(s.head); free(s.tail); free(s.count); free(s.bytes);
    PyBuffer_Release(&b_out);
e4:
    PyBuffer_Release(&b_size);
e3:
    PyBuffer_Release(&b_end);
e2:
    PyBuffer_Release(&b_start);
e1:
    PyBuffer_Release(&b_slot);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* since_last(key, start, keys, out): for each request (in start order), the time since the
   previous request of its key, or -1 for a key's first: the reuse distance, in one pass
   where numpy would sort every request by key. */
static PyObject *since_last(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_key, *o_start, *o_out;
    long long keys;
    if (!PyArg_ParseTuple(args, "OOLO", &o_key, &o_start, &keys, &o_out)) return NULL;
    Py_buffer b_key, b_start, b_out;
    PyObject *result = NULL;
    if (get(o_key, &b_key, 'q', -1, 0) < 0) return NULL;
    Py_ssize_t n = b_key.len / 8;
    if (get(o_start, &b_start, 'q', n, 0) < 0) goto s1;
    if (get(o_out, &b_out, 'q', n, 1) < 0) goto s2;
    const int64_t *key = b_key.buf, *start = b_start.buf;
    int64_t *out = b_out.buf, *last = malloc((size_t)(keys > 0 ? keys : 1) * 8);
    if (!last) {
        PyErr_NoMemory();
        goto s3;
    }
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) bad |= key[i] < 0 || key[i] >= keys;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "since_last: a key out of range");
    } else {
        for (long long k = 0; k < keys; k++) last[k] = NONE;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t k = key[i];
            out[i] = last[k] == NONE ? -1 : start[i] - last[k];
            last[k] = start[i];
        }
        result = Py_None;
        Py_INCREF(result);
    }
    free(last);
s3:
    PyBuffer_Release(&b_out);
s2:
    PyBuffer_Release(&b_start);
s1:
    PyBuffer_Release(&b_key);
    return result;
}

/* tally(key, outcome, duration, hit_cost, revalidate_us, group, hits, waited, revalidated,
   saved): the sums of one replay per key, or per group of keys, in one pass where numpy made
   a mask and a bincount each. hits counts both kinds of hit (a fresh copy, a fill waited
   for); saved adds, in request order (so the float sums are numpy's bincount's to the bit),
   a hit's duration minus its key's hit_cost and a revalidation's duration minus
   revalidate_us, never below zero.
   key: int64[n] in [0, keys); outcome: int8[n]; duration: int64[n]; hit_cost: float64[keys];
   group: None (each key its own: outs of length keys) or int64[keys], each key's row of the
   outs (a replay's sums per route then take a row per route, not per key: 4.85 M keys made
   five arrays of 39 MB a replay); hits, waited, revalidated: int64[outs] and saved:
   float64[outs], added to. */
static PyObject *tally(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_key, *o_out, *o_dur, *o_cost, *o_group, *o_hits, *o_waited, *o_reval, *o_saved;
    long long reval;
    if (!PyArg_ParseTuple(args, "OOOOLOOOOO", &o_key, &o_out, &o_dur, &o_cost, &reval, &o_group, &o_hits,
                          &o_waited, &o_reval, &o_saved))
        return NULL;
    Py_buffer b[9];
    int got = 0;
    PyObject *result = NULL;
    if (get(o_key, &b[got], 'q', -1, 0) < 0) goto t_done;
    got++;
    Py_ssize_t n = b[0].len / 8;
    if (get(o_out, &b[got], 'b', n, 0) < 0) goto t_done;
    got++;
    if (get(o_dur, &b[got], 'q', n, 0) < 0) goto t_done;
    got++;
    if (get(o_cost, &b[got], 'd', -1, 0) < 0) goto t_done;
    got++;
    Py_ssize_t keys = b[3].len / 8;
    if (get(o_hits, &b[got], 'q', -1, 1) < 0) goto t_done;
    got++;
    Py_ssize_t outs = b[4].len / 8;
    PyObject *rest[3] = {o_waited, o_reval, o_saved};
    for (int j = 0; j < 3; j++) {
        if (get(rest[j], &b[got], 'q', outs, 1) < 0) goto t_done;
        got++;
    }
    const int64_t *group = NULL;
    if (o_group != Py_None) {
        if (get(o_group, &b[got], 'q', keys, 0) < 0) goto t_done;
        group = b[got].buf;
        got++;
    } else if (outs != keys) {
        PyErr_SetString(PyExc_ValueError, "tally: without groups, a row of the sums per key");
        goto t_done;
    }
    const int64_t *key = b[0].buf, *dur = b[2].buf;
    const int8_t *outcome = b[1].buf;
    const double *cost = b[3].buf;
    int64_t *hits = b[4].buf, *waited = b[5].buf, *revalidated = b[6].buf;
    double *saved = b[7].buf;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) bad |= key[i] < 0 || key[i] >= keys;
    if (group != NULL)
        for (Py_ssize_t k = 0; k < keys; k++) bad |= group[k] < 0 || group[k] >= outs;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "tally: a key or group out of range");
        goto t_done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = key[i], g = group != NULL ? group[k] : k;
        int8_t o = outcome[i];
        double d;
        if (o == 1 || o == 2) {
            hits[g] += 1;
            waited[g] += o == 2;
            d = (double)dur[i] - cost[k];
        } else if (o == 3) {
            revalidated[g] += 1;
            if (reval < 0) continue;
            d = (double)dur[i] - (double)reval;
        } else {
            continue;
        }
        saved[g] += d < 0 ? 0.0 : d; /* NaN stays NaN, as numpy.maximum keeps it */
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
t_done:
    while (got > 0) PyBuffer_Release(&b[--got]);
    return result;
}

/* The k-th smallest of a[0..n) (0-based), a reordered so that a[k] holds it, every value
   before it no larger and every value after it no smaller (Hoare's selection, median of
   three pivots: equal values stop both scans, so a run of them splits evenly). */
static int64_t select_kth(int64_t *a, Py_ssize_t n, Py_ssize_t k) {
    Py_ssize_t lo = 0, hi = n - 1;
    while (hi > lo) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        int64_t x = a[lo], y = a[mid], z = a[hi], pivot;
        pivot = (x < y) ? ((y < z) ? y : (x < z ? z : x)) : ((x < z) ? x : (y < z ? z : y));
        Py_ssize_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) {
                int64_t t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return a[k];
    }
    return a[k];
}

/* medians(values, group, n_groups, out): per group, the median of the values whose group
   is in [0, n_groups) (others skipped); NaN for a group without one. An even count gives
   the mean of the two middle values, as pandas and numpy do. The values are laid out by
   group (a counting sort: two passes) and each group's middle found by selection, where a
   sort of every value by group took most of the time. */
static PyObject *medians(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_val, *o_grp, *o_out;
    long long groups;
    if (!PyArg_ParseTuple(args, "OOLO", &o_val, &o_grp, &groups, &o_out)) return NULL;
    if (groups < 0) {
        PyErr_SetString(PyExc_ValueError, "medians: n_groups must be >= 0");
        return NULL;
    }
    Py_buffer b_val, b_grp, b_out;
    PyObject *result = NULL;
    if (get(o_val, &b_val, 'q', -1, 0) < 0) return NULL;
    Py_ssize_t n = b_val.len / 8;
    if (get(o_grp, &b_grp, 'q', n, 0) < 0) goto m1;
    if (get(o_out, &b_out, 'd', groups, 1) < 0) goto m2;
    const int64_t *val = b_val.buf, *grp = b_grp.buf;
    double *out = b_out.buf;
    Py_ssize_t *first = calloc((size_t)groups + 1, sizeof(Py_ssize_t));
    Py_ssize_t *fill = malloc((size_t)(groups ? groups : 1) * sizeof(Py_ssize_t));
    int64_t *laid = malloc((size_t)(n ? n : 1) * 8);
    if (!first || !fill || !laid) {
        PyErr_NoMemory();
    } else {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            if (grp[i] >= 0 && grp[i] < groups) first[grp[i] + 1] += 1;
        for (long long g = 0; g < groups; g++) first[g + 1] += first[g];
        memcpy(fill, first, (size_t)groups * sizeof(Py_ssize_t));
        for (Py_ssize_t i = 0; i < n; i++)
            if (grp[i] >= 0 && grp[i] < groups) laid[fill[grp[i]]++] = val[i];
        for (long long g = 0; g < groups; g++) {
            Py_ssize_t m = first[g + 1] - first[g];
            int64_t *a = laid + first[g];
            if (m == 0) {
                out[g] = NAN;
                continue;
            }
            Py_ssize_t k = (m - 1) / 2;
            double lower = (double)select_kth(a, m, k);
            if (m % 2) {
                out[g] = lower;
            } else {
                int64_t upper = a[k + 1]; /* the smallest of those after the k-th */
                for (Py_ssize_t i = k + 2; i < m; i++)
                    if (a[i] < upper) upper = a[i];
                out[g] = (lower + (double)upper) / 2;
            }
        }
        Py_END_ALLOW_THREADS
        result = Py_None;
        Py_INCREF(result);
    }
    free(fill);
    free(first);
    free(laid);
    PyBuffer_Release(&b_out);
m2:
    PyBuffer_Release(&b_grp);
m1:
    PyBuffer_Release(&b_val);
    return result;
}

static PyMethodDef methods[] = {
    {"replay", replay, METH_VARARGS, "replay(slot, start, end, size, slots, n_workers, ttl, coalesce, "
                                     "revalidate_us, max_objects, max_bytes, outcome): see _replay.c"},
    {"since_last", since_last, METH_VARARGS, "since_last(key, start, keys, out): see _replay.c"},
    {"tally", tally, METH_VARARGS, "tally(key, outcome, duration, hit_cost, revalidate_us, group, hits, "
                                   "waited, revalidated, saved): see _replay.c"},
    {"medians", medians, METH_VARARGS, "medians(values, group, n_groups, out): see _replay.c"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_replay", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
