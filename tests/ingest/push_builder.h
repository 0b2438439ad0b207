/*
 * push_builder.h - push.v1 PushRequests for the ingest tests: one series
 * {__name__=process_cpu, service_name=<service>} whose samples all carry
 * the same pprof bytes, packed as a client sends it.  The messages stay in
 * the struct, so a test can change them before it packs.
 */
#ifndef UNHEX_TESTS_INGEST_PUSH_BUILDER_H
#define UNHEX_TESTS_INGEST_PUSH_BUILDER_H

#include <stdint.h>
#include <stdlib.h>

#include "push.pb-c.h"

#define PUSHB_MAX_SAMPLES 4

struct pushb {
	Push__V1__LabelPair l[2], *lp[2];
	Push__V1__RawSample rs, *rsp[PUSHB_MAX_SAMPLES];
	Push__V1__RawProfileSeries ser, *serp[1];
	Push__V1__PushRequest req;
};

/* `n` samples (at most PUSHB_MAX_SAMPLES) of `pprof` (borrowed) in one series. */
static inline void pushb_init(struct pushb *p, const char *service, const uint8_t *pprof,
			      size_t plen, size_t n)
{
	static const Push__V1__LabelPair l0 = PUSH__V1__LABEL_PAIR__INIT;
	static const Push__V1__RawSample rs0 = PUSH__V1__RAW_SAMPLE__INIT;
	static const Push__V1__RawProfileSeries ser0 = PUSH__V1__RAW_PROFILE_SERIES__INIT;
	static const Push__V1__PushRequest req0 = PUSH__V1__PUSH_REQUEST__INIT;

	if (n > PUSHB_MAX_SAMPLES)
		abort();
	p->l[0] = p->l[1] = l0;
	p->l[0].name = "__name__";
	p->l[0].value = "process_cpu";
	p->l[1].name = "service_name";
	p->l[1].value = (char *)service;
	p->lp[0] = &p->l[0];
	p->lp[1] = &p->l[1];
	p->rs = rs0;
	p->rs.raw_profile.data = (uint8_t *)pprof;
	p->rs.raw_profile.len = plen;
	for (size_t i = 0; i < PUSHB_MAX_SAMPLES; i++)
		p->rsp[i] = &p->rs;
	p->ser = ser0;
	p->ser.labels = p->lp;
	p->ser.n_labels = 2;
	p->ser.samples = p->rsp;
	p->ser.n_samples = n;
	p->serp[0] = &p->ser;
	p->req = req0;
	p->req.series = p->serp;
	p->req.n_series = 1;
}

/* The request packed: returns owned bytes, their length in *len. */
static inline uint8_t *pushb_pack(const struct pushb *p, size_t *len)
{
	uint8_t *body;

	*len = push__v1__push_request__get_packed_size(&p->req);
	body = malloc(*len ? *len : 1);
	if (!body)
		abort();
	push__v1__push_request__pack(&p->req, body);
	return body;
}

#endif
