/*
 * jfr_build.h - writes small JFR chunks (format 2.1, compressed integers)
 * for the tests of ingest/jfr.c: the metadata of the JDK's and
 * async-profiler's event types the parser reads, constant pools of a
 * handful of classes, methods and stack traces, and the events a test
 * asks for.  Written from the chunk format as the parser's header
 * comment describes it, independently of the parser.
 *
 * Stack traces (frames leaf first, "<class>.<method>:<line>"):
 *   1  Foo.bar:10, Foo.main:3
 *   2  Foo.baz:20, Foo.main:4
 *   3  Foo$$Lambda$12/0x0000000800c01234.run:1, Foo.main:5
 *      (renamed Foo$$Lambda_.run, as Pyroscope names it)
 *   4  <method 999, not in the pool>, Foo.main:6 (the first frame dropped)
 *   5  jdk/internal/reflect/GeneratedMethodAccessor31.invoke:0,
 *      Svc$$EnhancerBySpringCGLIB$$4f2a9c1e.run:2 (both renamed)
 * Thread states: 1 STATE_RUNNABLE, 2 STATE_SLEEPING.
 */
#ifndef UNHEX_TESTS_INGEST_JFR_BUILD_H
#define UNHEX_TESTS_INGEST_JFR_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jb {
	uint8_t *p;
	size_t n, cap;
};

static inline void jb_bytes(struct jb *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static inline void jb_byte(struct jb *b, uint8_t v)
{
	jb_bytes(b, &v, 1);
}

/* A compressed long: 7 bits per byte, the ninth byte whole. */
static inline void jb_long(struct jb *b, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		if (v < 0x80) {
			jb_byte(b, (uint8_t)v);
			return;
		}
		jb_byte(b, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	jb_byte(b, (uint8_t)v);
}

static inline void jb_utf8(struct jb *b, const char *s)
{
	jb_byte(b, 3);
	jb_long(b, strlen(s));
	jb_bytes(b, s, strlen(s));
}

static inline void jb_be64(struct jb *b, uint64_t v)
{
	for (int i = 7; i >= 0; i--)
		jb_byte(b, (uint8_t)(v >> (8 * i)));
}

/* A record: size (all of it, in a fixed 5-byte varint), type, payload. */
static inline void jb_record(struct jb *b, uint64_t type, const struct jb *payload)
{
	struct jb t = { 0 };
	size_t size;

	jb_long(&t, type);
	jb_bytes(&t, payload->p, payload->n);
	size = t.n + 5;
	for (int i = 0; i < 4; i++)
		jb_byte(b, (uint8_t)(((size >> (7 * i)) & 0x7f) | 0x80));
	jb_byte(b, (uint8_t)(size >> 28));
	jb_bytes(b, t.p, t.n);
	free(t.p);
}

/* ---- metadata ---------------------------------------------------------------- */

struct jb_meta {
	const char *str[256];
	int n;
};

static inline uint64_t jb_s(struct jb_meta *m, const char *s)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->str[i], s) == 0)
			return (uint64_t)i;
	m->str[m->n] = s;
	return (uint64_t)m->n++;
}

struct jb_field {
	const char *name;
	int type;
	int cp, array;
};

struct jb_class {
	int id;
	const char *name;
	struct jb_field f[12];
};

enum {
	JB_LONG = 20, JB_INT, JB_BOOL, JB_STRING, JB_FLOAT, JB_DOUBLE, JB_BYTE, JB_SHORT, JB_CHAR,
	JB_SYMBOL = 40, JB_CLASS, JB_METHOD, JB_FRAME, JB_STACK, JB_STATE, JB_THREAD, JB_INLINE,
	JB_FRAMETYPE,
	JB_EXEC = 100, JB_ALLOCS, JB_MON, JB_PARK, JB_SETTING, JB_WALL, JB_TLAB, JB_OUTTLAB,
	JB_OTHER, JB_LIVE, JB_MALLOC, JB_EMPTYARR, JB_EMPTY = 60,
};

static const struct jb_class jb_classes[] = {
	{ JB_LONG, "long", { { 0 } } },
	{ JB_INT, "int", { { 0 } } },
	{ JB_BOOL, "boolean", { { 0 } } },
	{ JB_STRING, "java.lang.String", { { 0 } } },
	{ JB_FLOAT, "float", { { 0 } } },
	{ JB_DOUBLE, "double", { { 0 } } },
	{ JB_BYTE, "byte", { { 0 } } },
	{ JB_SHORT, "short", { { 0 } } },
	{ JB_CHAR, "char", { { 0 } } },
	{ JB_SYMBOL, "jdk.types.Symbol", { { "string", JB_STRING, 0, 0 } } },
	{ JB_CLASS, "java.lang.Class",
	  { { "classLoader", JB_LONG, 0, 0 }, { "name", JB_SYMBOL, 1, 0 }, { "modifiers", JB_INT, 0, 0 } } },
	{ JB_METHOD, "jdk.types.Method",
	  { { "type", JB_CLASS, 1, 0 }, { "name", JB_SYMBOL, 1, 0 }, { "descriptor", JB_SYMBOL, 1, 0 },
	    { "hidden", JB_BOOL, 0, 0 } } },
	{ JB_FRAMETYPE, "jdk.types.FrameType", { { "description", JB_STRING, 0, 0 } } },
	{ JB_FRAME, "jdk.types.StackFrame",
	  { { "method", JB_METHOD, 1, 0 }, { "lineNumber", JB_INT, 0, 0 },
	    { "bytecodeIndex", JB_INT, 0, 0 }, { "type", JB_FRAMETYPE, 1, 0 } } },
	{ JB_STACK, "jdk.types.StackTrace",
	  { { "truncated", JB_BOOL, 0, 0 }, { "frames", JB_FRAME, 0, 1 } } },
	{ JB_STATE, "jdk.types.ThreadState", { { "name", JB_STRING, 0, 0 } } },
	{ JB_THREAD, "java.lang.Thread",
	  { { "osName", JB_STRING, 0, 0 }, { "javaThreadId", JB_LONG, 0, 0 } } },
	{ JB_INLINE, "jdk.types.Inline",
	  { { "a", JB_LONG, 0, 0 }, { "s", JB_STRING, 0, 0 }, { "f", JB_FLOAT, 0, 0 } } },
	{ JB_EXEC, "jdk.ExecutionSample",
	  { { "startTime", JB_LONG, 0, 0 }, { "sampledThread", JB_THREAD, 1, 0 },
	    { "stackTrace", JB_STACK, 1, 0 }, { "state", JB_STATE, 1, 0 },
	    { "contextId", JB_LONG, 0, 0 } } },
	{ JB_ALLOCS, "jdk.ObjectAllocationSample",
	  { { "startTime", JB_LONG, 0, 0 }, { "eventThread", JB_THREAD, 1, 0 },
	    { "stackTrace", JB_STACK, 1, 0 }, { "objectClass", JB_CLASS, 1, 0 },
	    { "weight", JB_LONG, 0, 0 } } },
	{ JB_MON, "jdk.JavaMonitorEnter",
	  { { "startTime", JB_LONG, 0, 0 }, { "duration", JB_LONG, 0, 0 },
	    { "eventThread", JB_THREAD, 1, 0 }, { "stackTrace", JB_STACK, 1, 0 },
	    { "monitorClass", JB_CLASS, 1, 0 }, { "address", JB_LONG, 0, 0 },
	    { "contextId", JB_LONG, 0, 0 } } },
	{ JB_PARK, "jdk.ThreadPark",
	  { { "startTime", JB_LONG, 0, 0 }, { "duration", JB_LONG, 0, 0 },
	    { "eventThread", JB_THREAD, 1, 0 }, { "stackTrace", JB_STACK, 1, 0 },
	    { "parkedClass", JB_CLASS, 1, 0 }, { "timeout", JB_LONG, 0, 0 } } },
	{ JB_SETTING, "jdk.ActiveSetting",
	  { { "startTime", JB_LONG, 0, 0 }, { "id", JB_LONG, 0, 0 }, { "name", JB_STRING, 0, 0 },
	    { "value", JB_STRING, 0, 0 } } },
	{ JB_WALL, "profiler.WallClockSample",
	  { { "startTime", JB_LONG, 0, 0 }, { "sampledThread", JB_THREAD, 1, 0 },
	    { "stackTrace", JB_STACK, 1, 0 }, { "state", JB_STATE, 1, 0 },
	    { "samples", JB_INT, 0, 0 }, { "contextId", JB_LONG, 0, 0 } } },
	{ JB_TLAB, "jdk.ObjectAllocationInNewTLAB",
	  { { "startTime", JB_LONG, 0, 0 }, { "eventThread", JB_THREAD, 1, 0 },
	    { "stackTrace", JB_STACK, 1, 0 }, { "objectClass", JB_CLASS, 1, 0 },
	    { "allocationSize", JB_LONG, 0, 0 }, { "tlabSize", JB_LONG, 0, 0 },
	    { "contextId", JB_LONG, 0, 0 } } },
	{ JB_OUTTLAB, "jdk.ObjectAllocationOutsideTLAB",
	  { { "startTime", JB_LONG, 0, 0 }, { "eventThread", JB_THREAD, 1, 0 },
	    { "stackTrace", JB_STACK, 1, 0 }, { "objectClass", JB_CLASS, 1, 0 },
	    { "allocationSize", JB_LONG, 0, 0 } } },
	/* An event the parser does not read, with every kind of field to skip. */
	{ JB_OTHER, "jdk.SomethingElse",
	  { { "startTime", JB_LONG, 0, 0 }, { "f", JB_FLOAT, 0, 0 }, { "d", JB_DOUBLE, 0, 0 },
	    { "b", JB_BYTE, 0, 0 }, { "sh", JB_SHORT, 0, 0 }, { "c", JB_CHAR, 0, 0 },
	    { "s", JB_STRING, 0, 0 }, { "in", JB_INLINE, 0, 0 }, { "arr", JB_INLINE, 0, 1 },
	    { "stackTrace", JB_STACK, 1, 0 } } },
	/* A class without fields, and an event with an array of it. */
	{ JB_EMPTY, "jdk.types.Empty", { { 0 } } },
	{ JB_EMPTYARR, "jdk.EmptyArray",
	  { { "startTime", JB_LONG, 0, 0 }, { "empties", JB_EMPTY, 0, 1 } } },
	{ JB_LIVE, "profiler.LiveObject",
	  { { "startTime", JB_LONG, 0, 0 }, { "stackTrace", JB_STACK, 1, 0 },
	    { "allocationSize", JB_LONG, 0, 0 } } },
	{ JB_MALLOC, "profiler.Malloc",
	  { { "startTime", JB_LONG, 0, 0 }, { "stackTrace", JB_STACK, 1, 0 },
	    { "size", JB_LONG, 0, 0 } } },
};

static inline void jb_meta_payload(struct jb *out)
{
	struct jb_meta m = { { 0 }, 0 };
	struct jb tree = { 0 };
	char idbuf[sizeof(jb_classes) / sizeof(jb_classes[0])][16];
	char ftype[sizeof(jb_classes) / sizeof(jb_classes[0])][12][16];
	size_t nc = sizeof(jb_classes) / sizeof(jb_classes[0]);

	/* root { metadata { class* { field* { annotation } } } region {} } */
	jb_long(&tree, jb_s(&m, "root"));
	jb_long(&tree, 0);
	jb_long(&tree, 2);
	jb_long(&tree, jb_s(&m, "metadata"));
	jb_long(&tree, 0);
	jb_long(&tree, nc);
	for (size_t i = 0; i < nc; i++) {
		const struct jb_class *c = &jb_classes[i];
		int nf = 0;

		while (nf < 12 && c->f[nf].name)
			nf++;
		snprintf(idbuf[i], sizeof(idbuf[i]), "%d", c->id);
		jb_long(&tree, jb_s(&m, "class"));
		jb_long(&tree, 2);
		jb_long(&tree, jb_s(&m, "name"));
		jb_long(&tree, jb_s(&m, c->name));
		jb_long(&tree, jb_s(&m, "id"));
		jb_long(&tree, jb_s(&m, idbuf[i]));
		jb_long(&tree, (uint64_t)nf + 1);
		/* An annotation child of the class, to be walked and forgotten. */
		jb_long(&tree, jb_s(&m, "annotation"));
		jb_long(&tree, 1);
		jb_long(&tree, jb_s(&m, "class"));
		jb_long(&tree, jb_s(&m, "200"));
		jb_long(&tree, 0);
		for (int f = 0; f < nf; f++) {
			int na = 2 + c->f[f].cp + c->f[f].array;

			snprintf(ftype[i][f], sizeof(ftype[i][f]), "%d", c->f[f].type);
			jb_long(&tree, jb_s(&m, "field"));
			jb_long(&tree, (uint64_t)na);
			jb_long(&tree, jb_s(&m, "name"));
			jb_long(&tree, jb_s(&m, c->f[f].name));
			jb_long(&tree, jb_s(&m, "class"));
			jb_long(&tree, jb_s(&m, ftype[i][f]));
			if (c->f[f].cp) {
				jb_long(&tree, jb_s(&m, "constantPool"));
				jb_long(&tree, jb_s(&m, "true"));
			}
			if (c->f[f].array) {
				jb_long(&tree, jb_s(&m, "dimension"));
				jb_long(&tree, jb_s(&m, "1"));
			}
			jb_long(&tree, 0);
		}
	}
	jb_long(&tree, jb_s(&m, "region"));
	jb_long(&tree, 0);
	jb_long(&tree, 0);
	jb_long(out, 1); /* start time */
	jb_long(out, 0); /* duration */
	jb_long(out, 1); /* metadata id */
	jb_long(out, (uint64_t)m.n);
	for (int i = 0; i < m.n; i++)
		jb_utf8(out, m.str[i]);
	jb_bytes(out, tree.p, tree.n);
	free(tree.p);
}

/* ---- constant pools ----------------------------------------------------------- */

/* `bomb`, when not 0: a pool of jdk.EmptyArray whose value holds that many empties. */
static inline void jb_pools_payload(struct jb *out, uint64_t bomb)
{
	static const char *const symbols[] = {
		"Foo", "bar", "main", "baz", "Foo$$Lambda$12/0x0000000800c01234", "run", "()V",
		"jdk/internal/reflect/GeneratedMethodAccessor31", "invoke",
		"Svc$$EnhancerBySpringCGLIB$$4f2a9c1e",
	};
	/* method key -> (class key, name symbol key) */
	static const int methods[][3] = { { 1, 1, 2 }, { 2, 1, 3 }, { 3, 1, 4 },
					  { 4, 2, 6 }, { 5, 3, 9 }, { 6, 4, 6 } };
	/* stack key -> frames (method key, line), leaf first */
	static const int stacks[][3][2] = { { { 1, 10 }, { 2, 3 }, { 0, 0 } },
					    { { 3, 20 }, { 2, 4 }, { 0, 0 } },
					    { { 4, 1 }, { 2, 5 }, { 0, 0 } },
					    { { 999, 7 }, { 2, 6 }, { 0, 0 } },
					    { { 5, 0 }, { 6, 2 }, { 0, 0 } } };
	static const int class_sym[] = { 1, 5, 8, 10 };

	jb_long(out, 1); /* start time */
	jb_long(out, 0); /* duration */
	jb_long(out, 0); /* delta: none before */
	jb_byte(out, 1); /* flush */
	jb_long(out, bomb ? 8 : 7); /* pools */
	if (bomb) {
		jb_long(out, JB_EMPTYARR);
		jb_long(out, 1);
		jb_long(out, 1);
		jb_long(out, 0);
		jb_long(out, bomb);
	}
	jb_long(out, JB_SYMBOL);
	jb_long(out, 10);
	for (int i = 0; i < 10; i++) {
		jb_long(out, (uint64_t)i + 1);
		jb_utf8(out, symbols[i]);
	}
	jb_long(out, JB_CLASS);
	jb_long(out, 4);
	for (int i = 1; i <= 4; i++) {
		jb_long(out, (uint64_t)i);
		jb_long(out, 0);                              /* classLoader */
		jb_long(out, (uint64_t)class_sym[i - 1]);     /* name symbol */
		jb_long(out, 1);                              /* modifiers */
	}
	jb_long(out, JB_METHOD);
	jb_long(out, 6);
	for (int i = 0; i < 6; i++) {
		jb_long(out, (uint64_t)methods[i][0]);
		jb_long(out, (uint64_t)methods[i][1]);
		jb_long(out, (uint64_t)methods[i][2]);
		jb_long(out, 7); /* descriptor */
		jb_byte(out, 0); /* hidden */
	}
	jb_long(out, JB_STACK);
	jb_long(out, 5);
	for (int i = 0; i < 5; i++) {
		jb_long(out, (uint64_t)i + 1);
		jb_byte(out, 0); /* truncated */
		jb_long(out, 2);
		for (int f = 0; f < 2; f++) {
			jb_long(out, (uint64_t)stacks[i][f][0]);
			jb_long(out, (uint64_t)stacks[i][f][1]);
			jb_long(out, 0); /* bytecodeIndex */
			jb_long(out, 1); /* frame type */
		}
	}
	jb_long(out, JB_STATE);
	jb_long(out, 2);
	jb_long(out, 1);
	jb_utf8(out, "STATE_RUNNABLE");
	jb_long(out, 2);
	/* Latin-1, to exercise the encoding. */
	jb_byte(out, 5);
	jb_long(out, 14);
	jb_bytes(out, "STATE_SLEEPING", 14);
	jb_long(out, JB_THREAD);
	jb_long(out, 1);
	jb_long(out, 1);
	jb_utf8(out, "worker-1");
	jb_long(out, 42);
	jb_long(out, JB_FRAMETYPE);
	jb_long(out, 1);
	jb_long(out, 1);
	/* UTF-16 code units. */
	jb_byte(out, 4);
	jb_long(out, 3);
	jb_long(out, 'J');
	jb_long(out, 'I');
	jb_long(out, 'T');
}

/* ---- events ---------------------------------------------------------------------- */

struct jb_event {
	int type;         /* JB_EXEC, ... */
	uint64_t stack;   /* stack key, 0 for none */
	uint64_t state;   /* thread state key (EXEC, WALL) */
	uint64_t ctx;     /* contextId */
	uint64_t value;   /* weight, duration (ticks), samples, tlabSize, size */
	const char *name, *svalue; /* ActiveSetting */
};

static inline void jb_event_payload(struct jb *p, const struct jb_event *e)
{
	jb_long(p, 100); /* startTime */
	switch (e->type) {
	case JB_EXEC:
		jb_long(p, 1);
		jb_long(p, e->stack);
		jb_long(p, e->state);
		jb_long(p, e->ctx);
		break;
	case JB_ALLOCS:
		jb_long(p, 1);
		jb_long(p, e->stack);
		jb_long(p, 1);
		jb_long(p, e->value);
		break;
	case JB_MON:
		jb_long(p, e->value);
		jb_long(p, 1);
		jb_long(p, e->stack);
		jb_long(p, 1);
		jb_long(p, 0xdead);
		jb_long(p, e->ctx);
		break;
	case JB_PARK:
		jb_long(p, e->value);
		jb_long(p, 1);
		jb_long(p, e->stack);
		jb_long(p, 1);
		jb_long(p, 0);
		break;
	case JB_SETTING:
		jb_long(p, 7);
		jb_utf8(p, e->name);
		jb_utf8(p, e->svalue);
		break;
	case JB_WALL:
		jb_long(p, 1);
		jb_long(p, e->stack);
		jb_long(p, e->state);
		jb_long(p, e->value);
		jb_long(p, e->ctx);
		break;
	case JB_TLAB:
		jb_long(p, 1);
		jb_long(p, e->stack);
		jb_long(p, 1);
		jb_long(p, 16);
		jb_long(p, e->value);
		jb_long(p, e->ctx);
		break;
	case JB_OUTTLAB:
		jb_long(p, 1);
		jb_long(p, e->stack);
		jb_long(p, 1);
		jb_long(p, e->value);
		break;
	case JB_OTHER:
		jb_bytes(p, "\x40\x49\x0f\xdb", 4);                 /* f */
		jb_bytes(p, "\x40\x09\x21\xfb\x54\x44\x2d\x18", 8); /* d */
		jb_byte(p, 7);                                     /* b */
		jb_long(p, 300);                                   /* sh */
		jb_long(p, 'x');                                   /* c */
		jb_byte(p, 0);                                     /* s: null */
		jb_long(p, 5);                                     /* in.a */
		jb_utf8(p, "inline");                              /* in.s */
		jb_bytes(p, "\0\0\0\0", 4);                        /* in.f */
		jb_long(p, 2);                                     /* arr: 2 */
		for (int i = 0; i < 2; i++) {
			jb_long(p, (uint64_t)i);
			jb_byte(p, 1);
			jb_bytes(p, "\0\0\0\0", 4);
		}
		jb_long(p, e->stack);
		break;
	case JB_LIVE:
		jb_long(p, e->stack);
		jb_long(p, e->value);
		break;
	case JB_MALLOC:
		jb_long(p, e->stack);
		jb_long(p, e->value);
		break;
	case JB_EMPTYARR:
		jb_long(p, e->value); /* how many empties: no bytes each */
		break;
	}
}

/* Appends one chunk with these events (the pools first) to `out`. */
static inline void jb_chunk_bomb(struct jb *out, const struct jb_event *ev, size_t n,
				 uint64_t ticks_per_s, uint64_t bomb)
{
	struct jb body = { 0 }, rec = { 0 };
	size_t meta_off, cp_off, start = out->n;

	cp_off = 68;
	jb_pools_payload(&rec, bomb);
	jb_record(&body, 1, &rec);
	for (size_t i = 0; i < n; i++) {
		rec.n = 0;
		jb_event_payload(&rec, &ev[i]);
		jb_record(&body, (uint64_t)ev[i].type, &rec);
	}
	meta_off = 68 + body.n;
	rec.n = 0;
	jb_meta_payload(&rec);
	jb_record(&body, 0, &rec);
	jb_bytes(out, "FLR\0", 4);
	jb_bytes(out, "\0\x02\0\x01", 4);
	jb_be64(out, 68 + body.n);
	jb_be64(out, cp_off);
	jb_be64(out, meta_off);
	jb_be64(out, 1700000000000000000ULL); /* start */
	jb_be64(out, 10000000000ULL);         /* duration */
	jb_be64(out, 1000);                   /* start ticks */
	jb_be64(out, ticks_per_s);
	jb_bytes(out, "\0\0\0\x01", 4);       /* flags: compressed integers */
	jb_bytes(out, body.p, body.n);
	(void)start;
	free(body.p);
	free(rec.p);
}

static inline void jb_chunk(struct jb *out, const struct jb_event *ev, size_t n,
			    uint64_t ticks_per_s)
{
	jb_chunk_bomb(out, ev, n, ticks_per_s, 0);
}

#endif
