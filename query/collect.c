/*
 * collect.c - the second stage of the pipeline: sums the values of every
 * profile of the selected series in [from, until) by (partition, stack id),
 * with the totals per time step of a timeline when one was set up; reads
 * the head and the blocks through one store reader (storage.h).
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/err.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void query__merge_init(struct qmerge *m)
{
	memset(m, 0, sizeof(*m));
	query__map_init_dense(&m->index);
}

void query__merge_release(struct qctx *q, struct qmerge *m)
{
	query__mem_free(q, m->stacks, m->cap, sizeof(*m->stacks));
	query__map_release(q, &m->index);
	free(m->tl);
	query__sym_free(q, m->sym);
	store_reader_close(m->rd);
	store_reader_close(m->rd_side);
	query__merge_init(m);
}

void query__merge_drop_stacks(struct qctx *q, struct qmerge *m)
{
	query__mem_free(q, m->stacks, m->cap, sizeof(*m->stacks));
	query__map_release(q, &m->index);
	query__map_init_dense(&m->index);
	m->stacks = NULL;
	m->n = m->cap = 0;
}

struct collect {
	struct qctx *q;
	struct qmerge *m;
	int rc;
	int64_t from_ns, until_ns; /* the merge's profiles; more are read for m->tap */
	size_t series;             /* the index of the series read (m->tap) */
};

void query__profiles_release(struct qctx *q, struct qprofiles *pp)
{
	query__mem_free(q, pp->start, pp->start_cap, sizeof(*pp->start));
	query__mem_free(q, pp->side, pp->side_cap, sizeof(*pp->side));
	query__mem_free(q, pp->idx, pp->idx_cap, sizeof(*pp->idx));
	query__mem_free(q, pp->val, pp->val_cap, sizeof(*pp->val));
	memset(pp, 0, sizeof(*pp));
}

/* Opens the record of one more profile of side m->side. */
static int profile_begin(struct qctx *q, struct qmerge *m)
{
	struct qprofiles *pp = m->per_profile;
	int rc;

	if ((rc = query__mem_grow(q, (void **)&pp->start, &pp->start_cap, sizeof(*pp->start),
				  pp->n + 2, "profile table")) ||
	    (rc = query__mem_grow(q, (void **)&pp->side, &pp->side_cap, sizeof(*pp->side),
				  pp->n + 1, "profile table")))
		return rc;
	if (pp->len > UINT32_MAX - 1)
		return err_set(q->msg, ERR_TOO_LARGE, "too many samples in the profiles");
	pp->start[pp->n] = (uint32_t)pp->len;
	pp->side[pp->n] = (uint8_t)m->side;
	pp->start[++pp->n] = (uint32_t)pp->len;
	return 0;
}

/* Adds one (stack index, value) entry to the profile opened last. */
static int profile_add(struct qctx *q, struct qprofiles *pp, uint32_t idx, int64_t val)
{
	int rc;

	if ((rc = query__mem_grow(q, (void **)&pp->idx, &pp->idx_cap, sizeof(*pp->idx), pp->len + 1,
				  "profile samples")) ||
	    (rc = query__mem_grow(q, (void **)&pp->val, &pp->val_cap, sizeof(*pp->val), pp->len + 1,
				  "profile samples")))
		return rc;
	if (pp->len >= UINT32_MAX - 1)
		return err_set(q->msg, ERR_TOO_LARGE, "too many samples in the profiles");
	pp->idx[pp->len] = idx;
	pp->val[pp->len++] = val;
	pp->start[pp->n] = (uint32_t)pp->len;
	return 0;
}

/* Whether span id `span` is one the query selected (binary search). */
static int span_selected(const struct qmerge *m, uint64_t span)
{
	size_t lo = 0, hi = m->n_span_sel;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->span_sel[mid] < span)
			lo = mid + 1;
		else
			hi = mid;
	}
	return span && lo < m->n_span_sel && m->span_sel[lo] == span;
}

/* Whether the profile id `id` is one the query selected (binary search). */
static int id_selected(const struct qmerge *m, const uint8_t *id)
{
	size_t lo = 0, hi = m->n_id_sel;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(m->id_sel[mid], id, 16);

		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/*
 * Profile p into the merge.  *sum: the sum of the values it kept; *all:
 * whether that is every value of p (no span selector, nothing skipped).
 */
static int merge_profile(struct collect *c, const struct store_profile_view *p, int64_t *sum_out,
			 int *all)
{
	struct qmerge *m = c->m;
	uint64_t hi = (uint64_t)p->part << 32;
	int64_t sum = 0;
	int rc;

	*all = 0;
	if (m->n_id_sel && !id_selected(m, p->meta.id))
		return 0;
	if (m->keep && (rc = m->keep(m->keep_ctx, p)) <= 0) {
		c->rc = rc;
		return rc < 0;
	}
	if (m->per_profile && (rc = profile_begin(c->q, m))) {
		c->rc = rc;
		return 1;
	}
	if (m->n_span_sel && !p->span_ids)
		goto counted; /* a span selector keeps no sample without a span */
	/* The loop's invariants in locals: the stores into m->stacks could
	 * alias the fields of m, so they were loaded again for every pair. */
	const uint32_t *ids = p->stack_ids;
	const int64_t *vals = p->values;
	struct qprofiles *pp = m->per_profile;
	const int spans = m->n_span_sel != 0;

	for (size_t i = 0; i < p->n; i++) {
		uint64_t key = hi | ids[i];
		uint32_t at;

		if (spans && !span_selected(m, p->span_ids[i]))
			continue;
		sum += vals[i];
		if (query__map_get(&m->index, key, &at)) {
			m->stacks[at].value += vals[i];
			if (pp && (rc = profile_add(c->q, pp, at, vals[i]))) {
				c->rc = rc;
				return 1;
			}
			continue;
		}
		rc = query__mem_grow(c->q, (void **)&m->stacks, &m->cap, sizeof(*m->stacks), m->n + 1,
				     "stack table");
		if (!rc)
			rc = query__map_put(c->q, &m->index, key, (uint32_t)m->n);
		if (rc) {
			c->rc = rc;
			return 1;
		}
		m->stacks[m->n].part = p->part;
		m->stacks[m->n].stack = ids[i];
		m->stacks[m->n].value = vals[i];
		if (pp && (rc = profile_add(c->q, pp, (uint32_t)m->n, vals[i]))) {
			c->rc = rc;
			return 1;
		}
		m->n++;
	}
counted:
	m->total += sum;
	m->profiles++;
	if (p->meta.period)
		m->period = p->meta.period;
	if (m->tl && m->tl_step_ns > 0 && p->meta.time_ns >= m->tl_start_ns) {
		int64_t b = (p->meta.time_ns - m->tl_start_ns) / m->tl_step_ns;
		if (b >= 0 && (size_t)b < m->tl_n)
			m->tl[b] += sum;
	}
	*sum_out = sum;
	*all = !m->n_span_sel;
	return 0;
}

/*
 * Charges p to the query's max_query_bytes a second time, as core.c's scan
 * charges each profile read: p is both the merge's and the tap's, which
 * read it once each before they shared the read (docs/limits.md).
 */
static int charge_again(struct qctx *q, const struct store_profile_view *p)
{
	uint64_t pair = sizeof(uint32_t) + sizeof(int64_t) + (p->span_ids ? sizeof(uint64_t) : 0);

	q->scanned += 64 + (uint64_t)p->n * pair;
	if (q->scanned <= q->max_scan)
		return 0;
	if (q->scan_refused)
		*q->scan_refused = 1;
	return err_set(q->msg, ERR_TOO_LARGE,
		       "the query reads more than its %llu bytes of samples (max_query_bytes, "
		       "docs/limits.md); narrow its time range or its selector",
		       (unsigned long long)q->max_scan);
}

static int add_profile(void *ctx, const struct store_profile_view *p)
{
	struct collect *c = ctx;
	const struct qtap *tap = c->m->tap;
	int64_t t = p->meta.time_ns, sum = 0;
	int merged = t >= c->from_ns && t < c->until_ns, all = 0, rc;

	if ((rc = query__ctx_check(c->q))) {
		c->rc = rc;
		return 1;
	}
	if (merged && (rc = merge_profile(c, p, &sum, &all)))
		return rc;
	if (!tap || t < tap->from_ns || t >= tap->until_ns)
		return 0;
	if (merged && (rc = charge_again(c->q, p))) {
		c->rc = rc;
		return 1;
	}
	if (!all)
		for (size_t i = sum = 0; i < p->n; i++)
			sum += p->values[i];
	c->rc = tap->profile(tap->ctx, c->series, p, sum);
	return c->rc != 0;
}

struct selected {
	struct query__ids l;
	const struct qtap *tap;
};

/* A selected series: into the list collect reads, and told to the tap. */
static int add_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *labels,
		      size_t n)
{
	struct selected *s = ctx;
	int rc = query__ids_add(&s->l, id, part, labels, n);

	return rc ? rc : s->tap->series(s->tap->ctx, id, part, labels, n);
}

int query__collect(struct qctx *q, struct query_selector *sel, int64_t from_ns,
		   int64_t until_ns, struct qmerge *m)
{
	struct selected sl = { { .q = q }, m->tap };
	struct query__ids *l = &sl.l;
	struct collect c = { q, m, 0, from_ns, until_ns, 0 };
	struct store_reader **rdp;
	int64_t rd_from = from_ns, rd_until = until_ns, read_from = from_ns, read_until = until_ns;
	int rc;

	/* One collect per merge, but for per-profile records (one per side). */
	assert(sel && ((!m->n && !m->profiles) || m->per_profile));
	if (until_ns <= from_ns)
		return err_set(q->msg, ERR_INVALID, "time range: until must be after from");
	/* One view of the head and the blocks for select and collect: a label
	 * set is one series across them, and a profile is read exactly once
	 * while sealing, compaction or retention change the store. */
	rdp = &m->rd;
	if (m->rd) {
		assert(m->per_profile && !m->rd_side);
		rdp = &m->rd_side;
	} else if (m->rd_until > m->rd_from) {
		rd_from = m->rd_from < from_ns ? m->rd_from : from_ns;
		rd_until = m->rd_until > until_ns ? m->rd_until : until_ns;
	}
	rc = query__reader_open(q, sel, 1, rd_from, rd_until, rdp);
	if (rc)
		return rc;
	if (rdp == &m->rd) {
		m->rd_from = rd_from;
		m->rd_until = rd_until;
	}
	if (m->tap) {
		assert(rdp == &m->rd && !m->per_profile);
		read_from = m->tap->from_ns < from_ns ? m->tap->from_ns : from_ns;
		read_until = m->tap->until_ns > until_ns ? m->tap->until_ns : until_ns;
	}
	rc = m->tap ? query__select_series_in(q, *rdp, sel, add_series, &sl)
		    : query__select_series_in(q, *rdp, sel, query__ids_add, l);
	for (size_t i = 0; i < l->n && !rc; i++) {
		c.series = i;
		rc = query__profiles_each(q, *rdp, l->v[i], read_from, read_until, add_profile, &c);
		if (c.rc)
			rc = c.rc;
		else if (rc > 0)
			rc = 0;
		else if (rc)
			rc = err_set(q->msg, rc, "reading profiles of series %llu: %s",
				     (unsigned long long)l->v[i], err_str(rc));
	}
	m->series += l->n;
	query__ids_free(l);
	return rc;
}


size_t query__warning_count(const struct qmerge *const *ms, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++)
		w += ms[i]->rd ? store_reader_warning_count(ms[i]->rd) : 0;
	return w;
}

int query__warnings_json(const struct qmerge *const *ms, size_t n, struct buf *out)
{
	size_t k = 0;
	int rc = buf_putc(out, '[');

	for (size_t i = 0; i < n && !rc; i++) {
		size_t nw = ms[i]->rd ? store_reader_warning_count(ms[i]->rd) : 0;

		for (size_t j = 0; j < nw && !rc; j++) {
			const char *w = store_reader_warning(ms[i]->rd, j);

			rc = k++ ? buf_putc(out, ',') : 0;
			if (!rc)
				rc = buf_put_json_str(out, w, strlen(w));
		}
	}
	return rc ? rc : buf_putc(out, ']');
}

/* Timeline buckets: at most ~1024 points, never under 10 s. */
int query__timeline_init(struct qctx *q, struct qmerge *m, int64_t from_ns, int64_t until_ns)
{
	const int64_t s = 1000000000LL;
	int64_t range = until_ns > from_ns ? until_ns - from_ns : s;
	int64_t step = range / 1024 / s + 1;

	assert(!m->tl);
	if (until_ns <= from_ns)
		return 0;
	step = (step + 9) / 10 * 10 * s;
	m->tl_step_ns = step;
	m->tl_start_ns = from_ns / step * step;
	/* Rounded up without until + step, which overflows near INT64_MAX. */
	m->tl_n = (size_t)((until_ns - m->tl_start_ns) / step +
			   ((until_ns - m->tl_start_ns) % step != 0));
	m->tl = calloc(m->tl_n ? m->tl_n : 1, sizeof(*m->tl));
	return m->tl ? 0 : err_set(q->msg, ERR_NOMEM, "out of memory (timeline)");
}
