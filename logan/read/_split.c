/* The split path in C: every line of a batch read by a format's plan in one pass.
 *
 * Lines arrive as Arrow string views (16 bytes each: length, then 12 inline bytes, or a
 * 4-byte prefix, the data buffer's index and the offset in it). A plan is a sequence of
 * steps made by logan/read/native.py from the format: a literal the line must hold as written,
 * or a field that runs to a stop byte (and takes it: the byte is the first of the literal
 * after it, which then starts after it). A line is taken when every step reads and the line
 * ends with the last one; each field comes out as a string view into the line's own
 * buffer (no copy), or inline when it is 12 bytes or less. Lines not taken are left to the
 * exact path (the format's regex), which reads or rejects them.
 *
 * The rules are those of the SQL split path (logan/read/compile.py), never looser: a line
 * with a tab when spaces separate the fields is not taken. Each field's table of bytes says
 * so for its text, and the literals hold none (logan/read/native.py), so only a syslog
 * header is searched here. Which escapes the exact path decodes depends on the server:
 * Apache's \" and \\ (its \xhh stay as written, and are taken here as they are), nginx's
 * \x22 and \x5C; where a backslash may mean anything else (HAProxy, nginx escape=none), a
 * line with one is not taken.
 *
 * Where the exact path decodes a field's escapes, this split takes the line and decodes
 * them alike (DEC_QUOTE, DEC_HEX), into a buffer of its own that the field's view points
 * into: what the reader makes of a request line (classification's keys, its query, its
 * route template) is then made of the text the exact path reads. The SQL split leaves such
 * lines to the regex. In a field where the exact path decodes none (Apache's fields outside
 * quotes) or that is read up to its last stop byte (an IPv6 client before ":port"),
 * ESC_QUOTE and ESC_HEX leave a line with such an escape to the exact path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t len;
    union {
        char inl[12];
        struct {
            char prefix[4];
            int32_t buf;
            int32_t off;
        } ref;
    } u;
} View;

/* One step of a plan, as logan/read/native.py packs it: nine int32. */
typedef struct {
    int32_t kind;      /* 0 literal, 1 field */
    int32_t a;         /* literal: offset in the literal pool; field: its output slot or -1 */
    int32_t b;         /* literal: length; field: stop byte, or -1 for the end of the line */
    int32_t spaces;    /* field: separators it holds inside (Apache %t: 1) */
    int32_t nonempty;  /* field: "" is not a value of it */
    int32_t last;      /* field: runs to the last stop byte of its word (IPv6 client:port) */
    int32_t table;     /* field: index of its 256-byte table (BAD, STOP, INNER_SEP, LIST_SEP) */
    int32_t shape;     /* field: what its text must look like (SHAPE_*), or 0 */
    int32_t most;      /* field: SHAPE_DIGITS: at most this many (low byte); "-" (bit 8) and
                        * "-1" (bit 9) pass too; bit 10: handed out as a number */
    int32_t pattern;   /* field: SHAPE_TIME: its strftime pattern's offset in the literal pool */
    int32_t pattern_len;
} Step;

enum { DASH_OK = 1 << 8, MINUS_ONE_OK = 1 << 9, AS_NUMBER = 1 << 10 };

/* The shapes of logan/read/compile.py's VALUE_PATTERNS that a check could let through wider
 * (a cast reads "+5" or "0x10"), and SHAPE_DIGITS, a field checked here for its check. */
enum { SHAPE_INT = 1, SHAPE_SIGNED = 2, SHAPE_DECIMAL = 3, SHAPE_DIGITS = 4, SHAPE_TIME = 5 };

static inline int all_digits(const char *p, int32_t from, int32_t to) {
    if (from >= to)
        return 0;
    for (int32_t i = from; i < to; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return 1;
}

/* Does p[start:end] have the shape? */
static int has_shape(const char *p, int32_t start, int32_t end, int32_t shape, int32_t most) {
    int32_t len = end - start;
    switch (shape) {
    case SHAPE_DIGITS: /* \d{1,most}, and "-" or "-1" when the check passes them */
        if (len == 1 && p[start] == '-')
            return (most & DASH_OK) != 0;
        if (len == 2 && p[start] == '-' && p[start + 1] == '1')
            return (most & MINUS_ONE_OK) != 0;
        return len <= (most & 0xff) && all_digits(p, start, end);
    case SHAPE_INT: /* -|-?\d+ */
        if (len == 1 && p[start] == '-')
            return 1;
        return all_digits(p, start + (len && p[start] == '-'), end);
    case SHAPE_SIGNED: /* [+-]?\d+ */
        return all_digits(p, start + (len && (p[start] == '-' || p[start] == '+')), end);
    case SHAPE_DECIMAL: { /* -|-?\d+(?:\.\d+)? */
        if (len == 1 && p[start] == '-')
            return 1;
        int32_t from = start + (len && p[start] == '-');
        const char *dot = memchr(p + from, '.', (size_t)(end - from));
        if (!dot)
            return all_digits(p, from, end);
        int32_t d = (int32_t)(dot - p);
        return all_digits(p, from, d) && all_digits(p, d + 1, end);
    }
    default:
        return 1;
    }
}

/* ---- times -------------------------------------------------------------------------- */

/* `width` digits at t[*pos] as a number in [lo, hi]; -1 when they are not. */
static inline int64_t fixed_digits(const char *t, int32_t len, int32_t *pos, int width, int64_t lo, int64_t hi) {
    if (len - *pos < width)
        return -1;
    int64_t v = 0;
    for (int i = 0; i < width; i++) {
        char c = t[*pos + i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *pos += width;
    return v < lo || v > hi ? -1 : v;
}

/* Days from 1970-01-01 to y-m-d, proleptic Gregorian (H. Hinnant's days_from_civil). */
static inline int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static inline int days_in_month(int64_t y, int64_t m) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
        return 29;
    return days[m - 1];
}

static const char MONTHS[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

/* t[0:len] read by a strftime pattern of fixed-width directives, as microseconds since
 * 1970 (an instant in UTC when the pattern has %z, else the time as written). Only the
 * texts such a pattern writes are read: every number at its full width and in range, a
 * real date, months as Jan..Dec; 0 for any other text (the exact path reads it). The
 * directives are those of TIME_DIRECTIVES in logan/read/native.py. */
static int parse_time(const char *t, int32_t len, const char *pat, int32_t plen, int64_t *out) {
    int64_t y = 1970, mo = 1, d = 1, h = 0, mi = 0, sec = 0, us = 0, offset = 0;
    int32_t pos = 0;
    for (int32_t k = 0; k < plen; k++) {
        if (pat[k] != '%') {
            if (pos >= len || t[pos] != pat[k])
                return 0;
            pos++;
            continue;
        }
        switch (pat[++k]) {
        case 'Y': y = fixed_digits(t, len, &pos, 4, 1000, 9999); if (y < 0) return 0; break;
        case 'm': mo = fixed_digits(t, len, &pos, 2, 1, 12); if (mo < 0) return 0; break;
        case 'd': d = fixed_digits(t, len, &pos, 2, 1, 31); if (d < 0) return 0; break;
        case 'H': h = fixed_digits(t, len, &pos, 2, 0, 23); if (h < 0) return 0; break;
        case 'M': mi = fixed_digits(t, len, &pos, 2, 0, 59); if (mi < 0) return 0; break;
        case 'S': sec = fixed_digits(t, len, &pos, 2, 0, 59); if (sec < 0) return 0; break;
        case 'g': us = fixed_digits(t, len, &pos, 3, 0, 999) * 1000; if (us < 0) return 0; break;
        case 'f': us = fixed_digits(t, len, &pos, 6, 0, 999999); if (us < 0) return 0; break;
        case 'b': {
            if (len - pos < 3)
                return 0;
            mo = 0;
            for (int i = 0; i < 12 && !mo; i++)
                if (memcmp(t + pos, MONTHS + 3 * i, 3) == 0)
                    mo = i + 1;
            if (!mo)
                return 0;
            pos += 3;
            break;
        }
        case 'z': { /* +HHMM or +HH:MM */
            if (pos >= len || (t[pos] != '+' && t[pos] != '-'))
                return 0;
            int sign = t[pos++] == '-' ? -1 : 1;
            int64_t oh = fixed_digits(t, len, &pos, 2, 0, 23);
            if (oh < 0)
                return 0;
            if (pos < len && t[pos] == ':')
                pos++;
            int64_t om = fixed_digits(t, len, &pos, 2, 0, 59);
            if (om < 0)
                return 0;
            offset = sign * (oh * 3600 + om * 60);
            break;
        }
        default:
            return 0;
        }
    }
    if (pos != len || d > days_in_month(y, mo))
        return 0;
    int64_t seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
    *out = seconds * 1000000 + us;
    return 1;
}

enum { LITERAL = 0, FIELD = 1 };
/* A field's table: what each byte is to it (0: part of its text). */
/* ESC_*: a backslash that starts an escape the exact path decodes leaves the line to it;
 * DEC_*: the same escape is decoded here (the kind plus 2). */
enum { BAD = 1, STOP = 2, INNER_SEP = 3, LIST_SEP = 4, ESC_QUOTE = 5, ESC_HEX = 6, DEC_QUOTE = 7, DEC_HEX = 8 };

/* A backslash at p[pos] (its field's table says ESC_* or DEC_*): the length of the escape
 * the exact path would decode there, or 0 when the backslash stays text. */
static inline int decoded_escape(const char *p, int32_t n, int32_t pos, uint8_t kind) {
    if (kind == ESC_QUOTE || kind == DEC_QUOTE) /* Apache, JSON: \" and \\ */
        return pos + 1 < n && (p[pos + 1] == '"' || p[pos + 1] == '\\') ? 2 : 0;
    /* nginx: \x22 and \x5C */
    return n - pos >= 4 && p[pos + 1] == 'x' &&
                   ((p[pos + 2] == '2' && p[pos + 3] == '2') || (p[pos + 2] == '5' && p[pos + 3] == 'C'))
               ? 4
               : 0;
}

/* The text of s[0:len] with its escapes of `kind` decoded, as the exact path decodes them
 * (compile.py's CompiledFormat._decode): into out, which holds len bytes; its length. */
static int32_t decode(const char *s, int32_t len, uint8_t kind, char *out) {
    int32_t o = 0;
    for (int32_t i = 0; i < len;) {
        int e = s[i] == '\\' ? decoded_escape(s, len, i, kind) : 0;
        if (e == 2)
            out[o++] = s[i + 1];
        else if (e == 4)
            out[o++] = s[i + 2] == '2' ? '"' : '\\';
        else
            out[o++] = s[i];
        i += e ? e : 1;
    }
    return o;
}

static inline const char *view_data(const View *v, const char *const *bufs) {
    return v->len <= 12 ? v->u.inl : bufs[v->u.ref.buf] + v->u.ref.off;
}

/* The view of `len` bytes at `text`, which sit at `off` in data buffer `buf`. */
static inline void put_view(View *out, const char *text, int32_t len, int32_t buf, int32_t off) {
    memset(out, 0, sizeof(View));
    out->len = len;
    if (len <= 12) {
        memcpy(out->u.inl, text, (size_t)len);
    } else {
        memcpy(out->u.ref.prefix, text, 4);
        out->u.ref.buf = buf;
        out->u.ref.off = off;
    }
}

/* A field checked to be SHAPE_DIGITS as a number: its value, or -1 for "-1"; "-" is NULL
 * (its bit in the validity bitmap stays 0). At most 18 digits: it fits. */
static inline void put_number(int64_t *values, uint8_t *valid, Py_ssize_t row, const char *text, int32_t len) {
    if (len == 1 && text[0] == '-') {
        values[row] = 0;
        return;
    }
    int64_t v = 0;
    if (len == 2 && text[0] == '-')
        v = -1;
    else
        for (int32_t i = 0; i < len; i++)
            v = v * 10 + (text[i] - '0');
    values[row] = v;
    valid[row >> 3] |= (uint8_t)(1u << (row & 7));
}

/* Read one line by the plan; fills starts/ends per output slot, and escaped[slot] with the
 * kind of the escapes to decode in it, setting *any (escaped is all 0 before, and its
 * caller clears it again when *any). 1 when taken. */
static int read_line(const char *p, int32_t n, int32_t pos, const Step *steps, int32_t nsteps,
                     const char *lits, const uint8_t *forbid, int sep, int32_t *starts, int32_t *ends,
                     int64_t *times, uint8_t *escaped, int *any) {
    for (int32_t k = 0; k < nsteps; k++) {
        const Step *s = &steps[k];
        if (s->kind == LITERAL) {
            /* a byte or two, mostly: a call to memcmp costs more than the compare */
            if (n - pos < s->b)
                return 0;
            for (int32_t k = 0; k < s->b; k++)
                if (p[pos + k] != lits[s->a + k])
                    return 0;
            pos += s->b;
            continue;
        }
        const uint8_t *look = forbid + 256 * (size_t)s->table;
        int32_t start = pos, end;
        if (s->last) {
            const char *word_end = memchr(p + pos, sep, (size_t)(n - pos));
            int32_t we = word_end ? (int32_t)(word_end - p) : n;
            int32_t q = we - 1;
            while (q >= pos && p[q] != (char)s->b)
                q--;
            if (q < pos)
                return 0;
            for (int32_t i = pos; i < q; i++) {
                uint8_t c = look[(uint8_t)p[i]];
                if (c == BAD || (c >= ESC_QUOTE && decoded_escape(p, n, i, c)))
                    return 0; /* no escape is decoded in such a field (not a quoted one) */
            }
            end = q;
        } else {
            /* One table lookup a byte: 0 goes on; else the field ends, takes one of its
             * own separators, or holds a byte it may not. */
            int32_t seps = 0;
            for (;;) {
                while (pos < n && !look[(uint8_t)p[pos]])
                    pos++;
                if (pos == n)
                    break;
                uint8_t c = (uint8_t)p[pos];
                if (look[c] >= ESC_QUOTE) { /* text, unless it starts an escape */
                    int e = decoded_escape(p, n, pos, look[c]);
                    if (e && look[c] < DEC_QUOTE)
                        return 0;
                    if (e && s->a >= 0) {
                        escaped[s->a] = look[c];
                        *any = 1;
                    }
                    pos += e ? e : 1; /* an escaped quote does not end the field */
                    continue;
                }
                if (look[c] == INNER_SEP && seps < s->spaces) {
                    seps++;
                    pos++;
                    continue;
                }
                /* nginx $upstream_*: ", " between the upstreams tried, " : " where an
                 * internal redirect went to another group; both stay in the field. */
                if (look[c] == LIST_SEP && pos > start && p[pos - 1] == ',') {
                    pos++;
                    continue;
                }
                if (look[c] == LIST_SEP && n - pos >= 3 && p[pos + 1] == ':' && p[pos + 2] == ' ') {
                    pos += 3;
                    continue;
                }
                if ((int32_t)c == s->b)
                    break;
                return 0;
            }
            if ((pos == n && s->b != -1) || seps != s->spaces)
                return 0;
            end = pos;
        }
        if (s->nonempty && end == start)
            return 0;
        if (s->shape == SHAPE_TIME) {
            int64_t t;
            if (!parse_time(p + start, end - start, lits + s->pattern, s->pattern_len, &t))
                return 0;
            if (s->a >= 0)
                times[s->a] = t;
        } else if (s->shape && !has_shape(p, start, end, s->shape, s->most)) {
            return 0;
        }
        if (s->a >= 0) {
            starts[s->a] = start;
            ends[s->a] = end;
        }
        pos = s->b == -1 ? end : end + 1; /* the stop byte: the next literal's first */
    }
    return pos == n;
}

/* A syslog header without '\\' (or a tab, when `no_tab`). */
static inline int plain_header(const char *p, int32_t n, int no_tab) {
    for (int32_t i = 0; i < n; i++)
        if (p[i] == '\\' || (no_tab && p[i] == '\t'))
            return 0;
    return 1;
}

/* The data buffers a batch's views point into, held while C reads them. */
typedef struct {
    Py_buffer *held;
    const char **bufs;
    Py_ssize_t got;
} Buffers;

/* The bytes of a slot of `room` numbers: the int64 values, then the validity bitmap,
 * rounded up to 8 so that the next slot's values are aligned. */
static inline Py_ssize_t number_slot(Py_ssize_t room) { return room * 8 + ((room + 7) / 8 + 7) / 8 * 8; }

/* Hold every buffer of the sequence `seq`; -1 with an exception set when one is not. */
static int hold_buffers(PyObject *seq, Buffers *d) {
    Py_ssize_t n = PySequence_Size(seq);
    if (n < 0)
        return -1;
    d->held = PyMem_Calloc((size_t)n + 1, sizeof(Py_buffer));
    d->bufs = PyMem_Calloc((size_t)n + 1, sizeof(char *));
    if (!d->held || !d->bufs) {
        PyErr_NoMemory();
        return -1;
    }
    for (; d->got < n; d->got++) {
        PyObject *b = PySequence_GetItem(seq, d->got);
        if (!b)
            return -1;
        int bad = PyObject_GetBuffer(b, &d->held[d->got], PyBUF_SIMPLE);
        Py_DECREF(b);
        if (bad)
            return -1;
        d->bufs[d->got] = d->held[d->got].buf;
    }
    return 0;
}

static void release_buffers(Buffers *d) {
    for (Py_ssize_t i = 0; i < d->got; i++)
        PyBuffer_Release(&d->held[i]);
    PyMem_Free(d->held);
    PyMem_Free(d->bufs);
}

static PyObject *split(PyObject *self, PyObject *args) {
    Py_buffer views = {0}, body = {0}, plan = {0}, lits = {0}, forbid = {0}, outbuf = {0};
    PyObject *buffers, *result = NULL;
    int nslots, sep, no_tab;
    Py_ssize_t most = -1; /* stop once this many lines are taken (-1: read them all) */
    Buffers data = {0};
    if (!PyArg_ParseTuple(args, "y*Oy*y*y*y*iiiw*|n", &views, &buffers, &body, &plan, &lits, &forbid, &nslots,
                          &sep, &no_tab, &outbuf, &most))
        return NULL;
    Py_ssize_t n = views.len / (Py_ssize_t)sizeof(View);
    Py_ssize_t i = 0;
    Py_ssize_t nsteps = plan.len / (Py_ssize_t)sizeof(Step);
    if (body.len && body.len != n * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "one body offset per line");
        goto done;
    }
    if (hold_buffers(buffers, &data) < 0)
        goto done;
    const char **bufs = data.bufs;
    /* a slot holds room for as many rows as can be taken */
    Py_ssize_t room = most >= 0 && most < n ? most : n;
    const Step *steps = plan.buf;
    if (nslots > 512) {
        PyErr_SetString(PyExc_ValueError, "too many fields");
        goto done;
    }
    /* A slot handed out as numbers (digits, or a time's microseconds) holds room int64
     * values, then the validity bitmap (number_slot bytes); the others room views. The
     * slots follow each other in the buffer (native.py's _slots says the same). */
    uint8_t as_number[512] = {0};
    for (Py_ssize_t k = 0; k < nsteps; k++) {
        const Step *s = &steps[k];
        if (s->kind == FIELD && s->a >= 0 && s->a < nslots &&
            ((s->shape == SHAPE_DIGITS && (s->most & AS_NUMBER)) || s->shape == SHAPE_TIME))
            as_number[s->a] = (uint8_t)s->shape;
    }
    Py_ssize_t at[512], need = 0;
    for (int k = 0; k < nslots; k++) {
        at[k] = need;
        need += as_number[k] ? number_slot(room) : room * (Py_ssize_t)sizeof(View);
    }
    if (outbuf.len < need) {
        PyErr_SetString(PyExc_ValueError, "the output buffer holds fewer bytes than the slots of its lines");
        goto done;
    }
    PyObject *rows = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (!rows)
        goto done;
    char *out = (char *)outbuf.buf;
    int32_t *taken = (int32_t *)PyByteArray_AS_STRING(rows);
    const View *lines = views.buf;
    const int32_t *offsets = body.len ? body.buf : NULL;
    Py_ssize_t m = 0;
    int32_t starts[512], ends[512];
    int64_t times[512];
    uint8_t escaped[512] = {0};
    /* The decoded texts of fields with escapes (rare: a user agent with a quote), after
     * the batch's own buffers in the views' numbering. */
    char *decoded = NULL;
    Py_ssize_t decoded_len = 0, decoded_room = 0;
    int out_of_memory = 0;
    const int32_t decoded_buf = (int32_t)data.got;
    Py_BEGIN_ALLOW_THREADS
    for (int k = 0; k < nslots; k++)
        if (as_number[k])
            memset((int64_t *)(out + at[k]) + room, 0, (size_t)(room + 7) / 8);
    for (; i < n && m != most; i++) {
        const View *line = &lines[i];
        const char *p = view_data(line, bufs);
        int32_t len = line->len;
        int32_t pos = offsets ? offsets[i] : 0;
        /* The fields' tables refuse '\\' (and tabs); the header before them is looked at here. */
        if (len == 0 || !plain_header(p, pos, no_tab))
            continue;
        int any = 0; /* a field with escapes to decode: rare, so escaped is cleared only then */
        int read = read_line(p, len, pos, steps, (int32_t)nsteps, lits.buf, forbid.buf, sep, starts, ends, times,
                             escaped, &any);
        if (!read) {
            if (any)
                memset(escaped, 0, sizeof escaped);
            continue;
        }
        for (int k = 0; k < nslots; k++) {
            if (as_number[k]) {
                int64_t *values = (int64_t *)(out + at[k]);
                uint8_t *valid = (uint8_t *)(values + room);
                if (as_number[k] == SHAPE_TIME) {
                    values[m] = times[k];
                    valid[m >> 3] |= (uint8_t)(1u << (m & 7));
                } else {
                    put_number(values, valid, m, p + starts[k], ends[k] - starts[k]);
                }
            } else if (escaped[k]) {
                int32_t raw = ends[k] - starts[k];
                if (decoded_len + raw > decoded_room) {
                    Py_ssize_t room = 2 * decoded_room + raw + 4096;
                    char *more = room <= INT32_MAX ? realloc(decoded, (size_t)room) : NULL;
                    if (!more) {
                        out_of_memory = 1;
                        break;
                    }
                    decoded = more;
                    decoded_room = room;
                }
                int32_t got = decode(p + starts[k], raw, escaped[k], decoded + decoded_len);
                put_view((View *)(out + at[k]) + m, decoded + decoded_len, got, decoded_buf, (int32_t)decoded_len);
                decoded_len += got;
            } else {
                put_view((View *)(out + at[k]) + m, p + starts[k], ends[k] - starts[k], line->u.ref.buf,
                         line->u.ref.off + starts[k]);
            }
        }
        if (any)
            memset(escaped, 0, sizeof escaped);
        if (out_of_memory)
            break;
        taken[m++] = (int32_t)i;
    }
    Py_END_ALLOW_THREADS
    if (out_of_memory) {
        Py_DECREF(rows);
        PyErr_NoMemory();
    } else {
        /* i: the lines read, taken or not; the decoded texts' buffer, or None */
        PyObject *side = decoded_len ? PyBytes_FromStringAndSize(decoded, decoded_len) : Py_NewRef(Py_None);
        result = side ? Py_BuildValue("nNnnN", m, rows, i, need, side) : NULL;
        if (!side)
            Py_DECREF(rows);
    }
    free(decoded);
done:
    release_buffers(&data);
    PyBuffer_Release(&views);
    PyBuffer_Release(&body);
    PyBuffer_Release(&plan);
    PyBuffer_Release(&lits);
    PyBuffer_Release(&forbid);
    PyBuffer_Release(&outbuf);
    return result;
}

/* The string views of every line of a block (logan/read/sources.py's _line_views, in one pass):
 * a line ends at \n, a \r before it is not part of it, a last piece without \n is a line. */
static PyObject *line_views(PyObject *self, PyObject *args) {
    Py_buffer block = {0};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*", &block))
        return NULL;
    const char *a = block.buf;
    Py_ssize_t len = block.len, n = 0;
    for (const char *q = a; (q = memchr(q, '\n', (size_t)(a + len - q))) != NULL; q++)
        n++;
    if (len && a[len - 1] != '\n')
        n++;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(View));
    if (!out) {
        PyBuffer_Release(&block);
        return NULL;
    }
    View *views = (View *)PyByteArray_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t start = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        const char *nl = memchr(a + start, '\n', (size_t)(len - start));
        Py_ssize_t end = nl ? nl - a : len, stop = end;
        if (stop > start && a[stop - 1] == '\r')
            stop--;
        put_view(&views[k], a + start, (int32_t)(stop - start), 0, (int32_t)start);
        start = end + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&block);
    return out;
}

/* ---- syslog headers ------------------------------------------------------------------ */

/* RE2's \s: a byte no \S takes. */
static inline int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }
static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

/* The length of the header `(?:\S+ )?[^\s\[\]:]+(?:\[\d+\])?: ` at p[pos:], host
 * first (RE2 tries it first), or -1. Each part has one way to match: a run of the bytes its
 * class takes, then a byte it does not. */
static int32_t host_program(const char *p, int32_t n, int32_t pos, int with_host) {
    if (with_host) {
        int32_t h = pos;
        while (h < n && !is_space(p[h]))
            h++;
        if (h == pos || h == n || p[h] != ' ')
            return -1;
        pos = h + 1;
    }
    int32_t q = pos;
    while (q < n && !is_space(p[q]) && p[q] != '[' && p[q] != ']' && p[q] != ':')
        q++;
    if (q == pos)
        return -1;
    if (q < n && p[q] == '[') {
        int32_t d = q + 1;
        while (d < n && is_digit(p[d]))
            d++;
        if (d > q + 1 && d < n && p[d] == ']' && n - d >= 3 && p[d + 1] == ':' && p[d + 2] == ' ')
            return d + 3;
        return -1; /* without the pid, ": " would have to follow the program, where "[" is */
    }
    return n - q >= 2 && p[q] == ':' && p[q + 1] == ' ' ? q + 2 : -1;
}

/* How far the RFC 3164 header of a line that starts with a capital letter goes, as
 * RE2's leftmost-first match of `[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} ` then
 * host_program reads it: 0 when it has none. */
static int32_t rfc3164_header(const char *p, int32_t n) {
    static const char shape[] = "Aaa dd dd:dd:dd "; /* A [A-Z], a [a-z], d a digit; day: [ \d] */
    if (n < 16)
        return 0;
    for (int i = 0; i < 16; i++) {
        char c = p[i], want = shape[i];
        int ok = want == 'A'   ? c >= 'A' && c <= 'Z'
                 : want == 'a' ? c >= 'a' && c <= 'z'
                 : want == 'd' ? is_digit(c) || (i == 4 && c == ' ')
                               : c == want;
        if (!ok)
            return 0;
    }
    int32_t end = host_program(p, n, 16, 1);
    if (end < 0)
        end = host_program(p, n, 16, 0);
    return end < 0 ? 0 : end;
}

/* syslog_headers(views, buffers, out) -> how many lines are left: out[i] (int32) gets the
 * length of line i's RFC 3164 header when the line starts with a capital letter (0: none),
 * else -1 (another kind of header or none: DuckDB's RE2 measures those). */
static PyObject *syslog_headers(PyObject *self, PyObject *args) {
    Py_buffer views = {0}, outbuf = {0};
    PyObject *buffers;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*Ow*", &views, &buffers, &outbuf))
        return NULL;
    Py_ssize_t n = views.len / (Py_ssize_t)sizeof(View), left = 0;
    Buffers data = {0};
    PyObject *result = NULL;
    if (outbuf.len < n * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "one int32 per line");
        goto done;
    }
    if (hold_buffers(buffers, &data) < 0)
        goto done;
    const char **bufs = data.bufs;
    const View *lines = views.buf;
    int32_t *out = outbuf.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *p = view_data(&lines[i], bufs);
        int32_t len = lines[i].len;
        if (len && p[0] >= 'A' && p[0] <= 'Z') {
            out[i] = rfc3164_header(p, len);
        } else {
            out[i] = -1;
            left++;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(left);
done:
    release_buffers(&data);
    PyBuffer_Release(&views);
    PyBuffer_Release(&outbuf);
    return result;
}

/* Where the host of an absolute URI [t, end) starts, past its first "://"; NULL when the
 * target is none (it starts with '/' or has no "://"), as logan/read/rows.py reads it. */
static const char *scheme_end(const char *t, const char *end) {
    if (end - t > 0 && *t != '/')
        for (const char *c = t; c + 3 <= end; c++)
            if (c[0] == ':' && c[1] == '/' && c[2] == '/')
                return c + 3;
    return NULL;
}

static int absolute(const char *t, const char *end) { return scheme_end(t, end) != NULL; }

/* Where the path of a request target [t, end) starts: the target, or what follows an
 * absolute URI's host; NULL for an absolute URI with nothing after its host. */
static const char *path_start(const char *t, const char *end) {
    const char *host = scheme_end(t, end);
    return host ? memchr(host, '/', (size_t)(end - host)) : t;
}

/* Where the query of a request target starts in [t, end): its first '?' after the host of
 * an absolute URI ("http://h?x/a" keeps "h?x" as its host), NULL when it has none. */
static const char *query_start(const char *t, const char *end) {
    const char *from = path_start(t, end);
    return from ? memchr(from, '?', (size_t)(end - from)) : NULL;
}

/* Whether the text [p, end) is exactly three words ("A B C", one space between each, as
 * rows.py's string_split reads a request line); *t and *e then bound the second. */
static int three_words(const char *p, const char *end, const char **t, const char **e) {
    const char *sp1 = memchr(p, ' ', (size_t)(end - p));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1)) : NULL;
    if (!sp2 || memchr(sp2 + 1, ' ', (size_t)(end - sp2 - 1)))
        return 0;
    *t = sp1 + 1;
    *e = sp2;
    return 1;
}

/* Whether the third word, after the second's end `e`, starts with "HTTP/". */
static int http_after(const char *e, const char *end) { return end - e > 5 && memcmp(e + 1, "HTTP/", 5) == 0; }

/* without_query(views, buffers, request, out) -> the bytes the cut texts were written to:
 * out gets each text without its query string. A request line ("GET /a?x=1 HTTP/1.1",
 * request=1) loses it from its second word ("GET /a HTTP/1.1"), a target ("/a?x=1") its
 * tail ("/a"); a text without one is its own view. What classification keys on when it
 * reads the path and not the query: a log whose query strings rarely repeat then has a key
 * per path, not per line. A line that is not "A B C" keeps its text (its path is NULL).
 *
 * With `queries` and `valid` (request lines only), each line's query as
 * logan/read/rows.py derives it from the whole line goes there too, so that no row's line is
 * split again in SQL: the text after the '?' of a line "A B HTTP/..." whose target has one,
 * else NULL (its bit in `valid` stays 0). With `rebuilt` too, a bit a line: whether the
 * line is its method, path, query and protocol joined again as rows.py derives them (a
 * line "A B HTTP/..." whose target is no absolute URI), so that no row's line is compared
 * with its parts in SQL. */
static PyObject *without_query(PyObject *self, PyObject *args) {
    Py_buffer views = {0}, outbuf = {0}, qbuf = {0}, vbuf = {0}, rbuf = {0};
    PyObject *buffers, *made = NULL;
    int request;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*Opw*|w*w*w*", &views, &buffers, &request, &outbuf, &qbuf, &vbuf, &rbuf))
        return NULL;
    Py_ssize_t n = views.len / (Py_ssize_t)sizeof(View), nbufs = PySequence_Size(buffers), bits = (n + 7) / 8;
    Buffers data = {0};
    View *queries = qbuf.buf;
    uint8_t *valid = vbuf.buf, *rebuilt = rbuf.buf;
    if (outbuf.len < views.len || (queries && (!request || qbuf.len < views.len || vbuf.len < bits)) ||
        (rebuilt && (!queries || rbuf.len < bits))) {
        PyErr_SetString(PyExc_ValueError, "one view out per view in (queries: of request lines, a bit each)");
        goto done;
    }
    if (queries) {
        memset(queries, 0, (size_t)n * sizeof(View));
        memset(valid, 0, (size_t)bits);
    }
    if (rebuilt)
        memset(rebuilt, 0, (size_t)bits);
    if (nbufs < 0 || hold_buffers(buffers, &data) < 0)
        goto done;
    const View *in = views.buf;
    View *out = outbuf.buf;
    /* [q, e): the part cut out of text i (q NULL: nothing); two passes, to size the bytes */
    size_t need = 0;
    for (int pass = 0; pass < 2; pass++) {
        char *base = pass ? PyBytes_AS_STRING(made) : NULL, *to = base;
        Py_BEGIN_ALLOW_THREADS /* the reader thread's: the ingest's own thread goes on */
        for (Py_ssize_t i = 0; i < n; i++) {
            const char *p = view_data(&in[i], data.bufs), *end = p + in[i].len, *t = p, *e = end;
            if (request && !three_words(p, end, &t, &e)) { /* the second of exactly three words */
                if (pass)
                    out[i] = in[i];
                continue;
            }
            const char *q = query_start(t, e);
            int32_t len = q ? (int32_t)(in[i].len - (e - q)) : in[i].len;
            int http = request && http_after(e, end);
            if (pass && queries && q && http) {
                int32_t at = in[i].len > 12 ? in[i].u.ref.off + (int32_t)(q + 1 - p) : 0;
                put_view(&queries[i], q + 1, (int32_t)(e - q - 1), in[i].len > 12 ? in[i].u.ref.buf : 0, at);
                valid[i / 8] |= (uint8_t)(1u << (i % 8));
            }
            if (pass && rebuilt && http && !absolute(t, e))
                rebuilt[i / 8] |= (uint8_t)(1u << (i % 8));
            if (!pass) {
                need += q && len > 12 && e < end ? (size_t)len : 0;
                continue;
            }
            if (!q) {
                out[i] = in[i];
            } else if (e == end || len <= 12) { /* a prefix of the text, or short: inline */
                char small[12];
                if (len <= 12) {
                    memcpy(small, p, (size_t)(q - p));
                    memcpy(small + (q - p), e, (size_t)(end - e));
                }
                put_view(&out[i], len <= 12 ? small : p, len, in[i].u.ref.buf, in[i].u.ref.off);
            } else { /* the words around the query, copied to the bytes made */
                memcpy(to, p, (size_t)(q - p));
                memcpy(to + (q - p), e, (size_t)(end - e));
                put_view(&out[i], to, len, (int32_t)nbufs, (int32_t)(to - base));
                to += len;
            }
        }
        Py_END_ALLOW_THREADS
        if (!pass && !(made = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)need)))
            goto done;
    }
done:
    release_buffers(&data);
    PyBuffer_Release(&views);
    PyBuffer_Release(&outbuf);
    PyBuffer_Release(&qbuf); /* those not given hold no object: a no-op */
    PyBuffer_Release(&vbuf);
    PyBuffer_Release(&rbuf);
    return made;
}

/* request_paths(views, buffers, offsets, valid) -> bytes: each request line's path as
 * logan/read/rows.py derives it, an Arrow string array's int32 `offsets` (n + 1) and data
 * (returned); NULL (empty, its bit in `valid` 0) unless the line is "A B HTTP/...". The
 * path is the target up to its first '?'; an absolute URI's is what follows its host, "/"
 * when nothing does. What the route template of a row classified where it is reads: made
 * in the reader thread from these, not per row in SQL. */
static PyObject *request_paths(PyObject *self, PyObject *args) {
    Py_buffer views = {0}, obuf = {0}, vbuf = {0};
    PyObject *buffers, *made = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*Ow*w*", &views, &buffers, &obuf, &vbuf))
        return NULL;
    Py_ssize_t n = views.len / (Py_ssize_t)sizeof(View);
    Buffers data = {0};
    int32_t *offsets = obuf.buf;
    uint8_t *valid = vbuf.buf;
    if (obuf.len < (n + 1) * (Py_ssize_t)sizeof(int32_t) || vbuf.len < (n + 7) / 8) {
        PyErr_SetString(PyExc_ValueError, "n + 1 offsets and a bit a line");
        goto done;
    }
    if (hold_buffers(buffers, &data) < 0)
        goto done;
    const View *in = views.buf;
    memset(valid, 0, (size_t)(n + 7) / 8);
    for (int pass = 0; pass < 2; pass++) {
        char *to = pass ? PyBytes_AS_STRING(made) : NULL;
        int64_t at = 0;
        Py_BEGIN_ALLOW_THREADS /* the reader thread's */
        for (Py_ssize_t i = 0; i < n; i++) {
            const char *p = view_data(&in[i], data.bufs), *end = p + in[i].len, *t, *e;
            if (three_words(p, end, &t, &e) && http_after(e, end)) {
                const char *from = path_start(t, e);
                if (from) /* what follows an absolute URI's host, or "/" when nothing does */
                    t = from;
                else
                    t = "/", e = t + 1;
                const char *q = memchr(t, '?', (size_t)(e - t));
                if (q)
                    e = q;
                if (pass) {
                    memcpy(to + at, t, (size_t)(e - t));
                    valid[i / 8] |= (uint8_t)(1u << (i % 8));
                }
                at += e - t;
            }
            if (pass)
                offsets[i + 1] = (int32_t)at;
        }
        Py_END_ALLOW_THREADS
        if (!pass) {
            if (at > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "the paths take more than 2 GB");
                goto done;
            }
            if (!(made = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)at)))
                goto done;
            offsets[0] = 0;
        }
    }
done:
    release_buffers(&data);
    PyBuffer_Release(&views);
    PyBuffer_Release(&obuf);
    PyBuffer_Release(&vbuf);
    return made;
}

/* The view of the `len` bytes at `s`, which lie within the text of view `in` (at `p`): into
 * the same buffer, or inline. */
static inline void sub_view(View *out, const View *in, const char *p, const char *s, int32_t len) {
    int far = in->len > 12;
    put_view(out, s, len, far ? in->u.ref.buf : 0, far ? in->u.ref.off + (int32_t)(s - p) : 0);
}

static inline int word_byte(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* The rest of logan/read/classify.py's PUPPET_PATH after its prefix, from `s`:
 * "/([a-z_]+)(?:/(.*))?$"; the indirection and key (empty when there is none) go to the
 * bounds given. RE2's '.' is any character but '\n'. */
static int puppet_tail(const char *s, const char *end, const char **ind, const char **ind_end, const char **key) {
    if (s >= end || *s != '/')
        return 0;
    const char *r = s + 1;
    while (r < end && ((*r >= 'a' && *r <= 'z') || *r == '_'))
        r++;
    if (r == s + 1 || (r < end && (*r != '/' || memchr(r + 1, '\n', (size_t)(end - r - 1)))))
        return 0;
    *ind = s + 1, *ind_end = r, *key = r < end ? r + 1 : end;
    return 1;
}

/* PUPPET_PATH over the path [t, e): "^/(puppet/v3|puppet-ca/v1|[A-Za-z0-9_]+)/..." with
 * RE2's leftmost-first choice of alternatives; the prefix's end and the tail's bounds. */
static int puppet_path(const char *t, const char *e, const char **pre_end, const char **ind, const char **ind_end,
                       const char **key) {
    static const char *const fixed[] = {"puppet/v3", "puppet-ca/v1"};
    if (e - t < 1 || *t != '/')
        return 0;
    const char *p = t + 1;
    for (int k = 0; k < 2; k++) {
        size_t n = strlen(fixed[k]);
        if ((size_t)(e - p) >= n && memcmp(p, fixed[k], n) == 0 && puppet_tail(p + n, e, ind, ind_end, key)) {
            *pre_end = p + n;
            return 1;
        }
    }
    const char *w = p;
    while (w < e && word_byte(*w))
        w++;
    if (w > p && puppet_tail(w, e, ind, ind_end, key)) {
        *pre_end = w;
        return 1;
    }
    return 0;
}

/* The value of the first "environment=" parameter of the query [q, e) (at its start or
 * after a '&'), up to the next '&': classify.py's _QUERY_ENV; NULL (0) when none or empty. */
static int query_environment(const char *q, const char *e, const char **v, const char **v_end) {
    static const char name[] = "environment=";
    const size_t n = sizeof(name) - 1;
    for (const char *c = q; c + n <= e; c++) {
        if ((c == q || c[-1] == '&') && memcmp(c, name, n) == 0) {
            const char *amp = memchr(c + n, '&', (size_t)(e - c - n));
            *v = c + n, *v_end = amp ? amp : e;
            return *v_end > *v;
        }
        const char *next = memchr(c, '&', (size_t)(e - c)); /* the next parameter */
        if (!next)
            return 0;
        c = next; /* the loop's c++ steps past the '&' */
    }
    return 0;
}

/* request_parts(views, buffers, out, valid, rebuilt, puppet): what logan/read/rows.py
 * derives from each request line, so that the ingest's keys need no split of their lines
 * in SQL. `out` gets five views a line, by part: every line's method, then every path,
 * query, protocol and host (of an absolute URI's target: the vhost a log without one
 * takes), each NULL (a 0 bit in its bitmap of `valid`, five bitmaps one after the other)
 * unless the line is "A B HTTP/..."; the query is NULL too when the target has none, the
 * host when it is not absolute. An absolute URI's path is what follows its host, "/" when
 * nothing does. `rebuilt` gets a bit for each line that is its method, path, query and
 * protocol joined again (rows.py's REBUILT_TEST): a line "A B HTTP/..." whose target is no
 * absolute URI.
 *
 * With `puppet`, four views more a line, and two bitmaps: the Puppet profile's parse, so
 * that no regex runs a key in SQL: the parts of the path classify.py's PUPPET_PATH
 * extracts (prefix, indirection, key: '' each where it does not match; NULL with the
 * path), and the query's environment parameter (NULL when none: its own bitmap). */
static PyObject *request_parts(PyObject *self, PyObject *args) {
    Py_buffer views = {0}, obuf = {0}, vbuf = {0}, rbuf = {0};
    PyObject *buffers, *result = NULL;
    int puppet;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*Ow*w*w*p", &views, &buffers, &obuf, &vbuf, &rbuf, &puppet))
        return NULL;
    Py_ssize_t n = views.len / (Py_ssize_t)sizeof(View), bits = (n + 7) / 8;
    Py_ssize_t parts = puppet ? 9 : 5, bitmaps = puppet ? 7 : 5;
    Buffers data = {0};
    if (obuf.len < parts * views.len || vbuf.len < bitmaps * bits || rbuf.len < bits) {
        PyErr_SetString(PyExc_ValueError, "five views out per view in (nine for Puppet), a bitmap each, one more");
        goto done;
    }
    if (hold_buffers(buffers, &data) < 0)
        goto done;
    const View *in = views.buf;
    View *out = obuf.buf;
    uint8_t *valid = vbuf.buf, *rebuilt = rbuf.buf;
    memset(out, 0, (size_t)(parts * views.len));
    memset(valid, 0, (size_t)(bitmaps * bits));
    memset(rebuilt, 0, (size_t)bits);
    Py_BEGIN_ALLOW_THREADS /* the reader thread's */
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *p = view_data(&in[i], data.bufs), *end = p + in[i].len, *t, *e;
        if (!three_words(p, end, &t, &e) || !http_after(e, end))
            continue;
        uint8_t bit = (uint8_t)(1u << (i % 8));
        const char *host = scheme_end(t, e), *from = path_start(t, e), *q = query_start(t, e);
        const char *path_end = q ? q : e;
        sub_view(&out[i], &in[i], p, p, (int32_t)(t - 1 - p));
        if (from)
            sub_view(&out[n + i], &in[i], p, from, (int32_t)(path_end - from));
        else /* an absolute URI with nothing after its host */
            put_view(&out[n + i], "/", 1, 0, 0);
        if (q) {
            sub_view(&out[2 * n + i], &in[i], p, q + 1, (int32_t)(e - q - 1));
            valid[2 * bits + i / 8] |= bit;
        }
        sub_view(&out[3 * n + i], &in[i], p, e + 1, (int32_t)(end - e - 1));
        if (host) {
            const char *slash = memchr(host, '/', (size_t)(e - host));
            sub_view(&out[4 * n + i], &in[i], p, host, (int32_t)((slash ? slash : e) - host));
            valid[4 * bits + i / 8] |= bit;
        } else {
            rebuilt[i / 8] |= bit;
        }
        valid[i / 8] |= bit;
        valid[bits + i / 8] |= bit;
        valid[3 * bits + i / 8] |= bit;
        if (!puppet)
            continue;
        const char *pre_end, *ind, *ind_end, *key, *v, *v_end; /* "/": no match, '' each */
        if (from && puppet_path(from, path_end, &pre_end, &ind, &ind_end, &key)) {
            sub_view(&out[5 * n + i], &in[i], p, from + 1, (int32_t)(pre_end - from - 1));
            sub_view(&out[6 * n + i], &in[i], p, ind, (int32_t)(ind_end - ind));
            sub_view(&out[7 * n + i], &in[i], p, key, (int32_t)(path_end - key));
        }
        valid[5 * bits + i / 8] |= bit;
        if (q && query_environment(q + 1, e, &v, &v_end)) {
            sub_view(&out[8 * n + i], &in[i], p, v, (int32_t)(v_end - v));
            valid[6 * bits + i / 8] |= bit;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release_buffers(&data);
    PyBuffer_Release(&views);
    PyBuffer_Release(&obuf);
    PyBuffer_Release(&vbuf);
    PyBuffer_Release(&rbuf);
    return result;
}

/* A text's hash, eight bytes at a time (multiply and shift, as the mixers of MurmurHash3
 * and splitmix64): a batch hashes its 250,000 request lines in a few milliseconds. */
static inline uint64_t text_hash(const char *p, int32_t len) {
    uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ULL, w;
    int32_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    if (i < len) {
        w = 0;
        memcpy(&w, p + i, (size_t)(len - i));
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    }
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 32);
}

/* dictionary_encode(views, buffers, ids) -> the index of each distinct text's first
 * occurrence (int32 bytes): ids gets each text's number, the distinct texts numbered in
 * the order they first occur (pyarrow's Array.dictionary_encode, whose first call imports
 * pyarrow.compute: 0.05-0.15 s of every ingest). An open-addressing table of the first
 * occurrences, twice as many slots as texts, each slot the first occurrence's index.
 *
 * Most of the time went in waiting for memory: a text's slot, then the view of the text
 * in it, then that text's bytes, each likely a cache miss. So the hashes run AHEAD texts
 * in front, and each slot and then each first occurrence's view is asked for (prefetched)
 * before it is read. */
enum { AHEAD = 16 };

static PyObject *dictionary_encode(PyObject *self, PyObject *args) {
    Py_buffer views = {0}, idbuf = {0};
    PyObject *buffers, *first = NULL;
    int32_t *slots = NULL, *firsts = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*Ow*", &views, &buffers, &idbuf))
        return NULL;
    Py_ssize_t n = views.len / (Py_ssize_t)sizeof(View);
    Buffers data = {0};
    if (idbuf.len < n * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "one int32 id out per view in");
        goto done;
    }
    if (PySequence_Size(buffers) < 0 || hold_buffers(buffers, &data) < 0)
        goto done;
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap <<= 1;
    slots = malloc(cap * sizeof(int32_t));
    firsts = malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!slots || !firsts) {
        PyErr_NoMemory();
        goto done;
    }
    memset(slots, 0xFF, cap * sizeof(int32_t)); /* -1: empty */
    const View *v = views.buf;
    int32_t *ids = idbuf.buf, distinct = 0;
    size_t at_of[AHEAD]; /* the home slot of text i, at i % AHEAD */
    Py_BEGIN_ALLOW_THREADS /* the reader thread's: the ingest's own thread goes on */
    for (Py_ssize_t i = 0; i < n && i < AHEAD; i++) {
        at_of[i] = (size_t)text_hash(view_data(&v[i], data.bufs), v[i].len) & (cap - 1);
        __builtin_prefetch(&slots[at_of[i]]);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t at = at_of[i % AHEAD];
        Py_ssize_t next = i + AHEAD, half = i + AHEAD / 2;
        if (next < n) {
            size_t a = (size_t)text_hash(view_data(&v[next], data.bufs), v[next].len) & (cap - 1);
            at_of[next % AHEAD] = a;
            __builtin_prefetch(&slots[a]);
        }
        if (half < n) { /* its slot is in cache by now: ask for the view it points to */
            int32_t k = slots[at_of[half % AHEAD]];
            if (k >= 0)
                __builtin_prefetch(&v[firsts[k]]);
        }
        const char *p = view_data(&v[i], data.bufs);
        for (;; at = (at + 1) & (cap - 1)) {
            int32_t k = slots[at];
            if (k < 0) { /* a new text: the next number */
                slots[at] = distinct;
                firsts[distinct] = (int32_t)i;
                ids[i] = distinct++;
                break;
            }
            const View *f = &v[firsts[k]];
            if (f->len == v[i].len && memcmp(view_data(f, data.bufs), p, (size_t)v[i].len) == 0) {
                ids[i] = k;
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS
    first = PyBytes_FromStringAndSize((const char *)firsts, (Py_ssize_t)distinct * (Py_ssize_t)sizeof(int32_t));
done:
    free(slots);
    free(firsts);
    release_buffers(&data);
    PyBuffer_Release(&views);
    PyBuffer_Release(&idbuf);
    return first;
}

/* parse_time(text, pattern) -> microseconds, or None: the split's reading of a time, for
 * the checks of logan/read/native.py and the tests. */
static PyObject *py_parse_time(PyObject *self, PyObject *args) {
    Py_buffer text = {0}, pattern = {0};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*", &text, &pattern))
        return NULL;
    int64_t us = 0;
    int ok = parse_time(text.buf, (int32_t)text.len, pattern.buf, (int32_t)pattern.len, &us);
    PyBuffer_Release(&text);
    PyBuffer_Release(&pattern);
    if (!ok)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(us);
}

static PyMethodDef methods[] = {
    {"parse_time", py_parse_time, METH_VARARGS, "parse_time(text, pattern) -> microseconds since 1970, or None"},
    {"syslog_headers", syslog_headers, METH_VARARGS,
     "syslog_headers(views, buffers, out) -> lines left to RE2; out: RFC 3164 header lengths, -1 where left"},
    {"line_views", line_views, METH_VARARGS, "line_views(block) -> the string views of its lines"},
    {"request_paths", request_paths, METH_VARARGS,
     "request_paths(views, buffers, offsets, valid) -> bytes; each request line's path as an Arrow string"},
    {"request_parts", request_parts, METH_VARARGS,
     "request_parts(views, buffers, out, valid, rebuilt, puppet); out gets each request line's method,"
     " path, query, protocol and absolute URI's host (and with puppet: its Puppet prefix, indirection,"
     " key and query environment), views by part (valid: a bitmap each, the Puppet parts' one shared);"
     " rebuilt: a bit for each line that is its parts joined"},
    {"dictionary_encode", dictionary_encode, METH_VARARGS,
     "dictionary_encode(views, buffers, ids) -> int32 bytes: each distinct text's first index; ids: its number"},
    {"without_query", without_query, METH_VARARGS,
     "without_query(views, buffers, request, out[, queries, valid[, rebuilt]]) -> bytes; out gets the"
     " texts without their query (queries: each request line's query, valid: its validity bitmap;"
     " rebuilt: a bit for each line that is its parts joined)"},
    {"split", split, METH_VARARGS,
     "split(views, buffers, body_offsets, plan, literals, forbidden, slots, sep, no_tab, out[, most])"
     " -> (taken, taken line indexes, lines read, bytes of out used); out gets each slot's lines"
     " (or `most`) field views, or int64 values and validity bitmap, one slot after the other;"
     " reading stops once `most` are taken"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_split", NULL, -1, methods};

PyMODINIT_FUNC PyInit__split(void) { return PyModule_Create(&module); }
