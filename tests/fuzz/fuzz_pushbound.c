/*
 * fuzz_pushbound.c - libFuzzer target: the admission's reading of a binary
 * push.v1 PushRequest off its wire bytes (web/pushbound.c), differential
 * against protobuf-c.  Bytes protobuf-c unpacks as a PushRequest must give
 * a bound of at least the sum of web__profile_bound over the profiles it
 * unpacked: a lower one would let a request inflate past what it reserved.
 */
#include <stdint.h>
#include <stdlib.h>

#include "web/web_int.h"

#include "push.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t max = (size_t)64 << 20;
	Push__V1__PushRequest *req = push__v1__push_request__unpack(NULL, size, data);
	size_t sum = 0, want = 0;
	int rc = web__push_bound(data, size, max, &sum);

	if (!req)
		return 0;
	for (size_t i = 0; i < req->n_series; i++)
		for (size_t j = 0; j < req->series[i]->n_samples; j++) {
			const ProtobufCBinaryData *d = &req->series[i]->samples[j]->raw_profile;

			want += web__profile_bound((const char *)d->data, d->len, max);
		}
	push__v1__push_request__free_unpacked(req, NULL);
	if (rc != 1 || sum < want)
		abort();
	return 0;
}
