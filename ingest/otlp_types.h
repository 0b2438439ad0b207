/*
 * otlp_types.h - short names for the protoc-c types of the OTLP profiles
 * request (proto/otlp_*.proto), for ingest/otlp_convert.c and its tests.
 */
#ifndef UNHEX_INGEST_OTLP_TYPES_H
#define UNHEX_INGEST_OTLP_TYPES_H

#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Req;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles ResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles ScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit KeyValueAndUnit;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ValueType;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;

#define ANY(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x

struct arena;
struct err_msg;
struct ingest_limits;

/*
 * otlp_json.c: decodes the OTLP/HTTP JSON encoding of a request p[0..n)
 * into the structs protobuf-c would unpack, allocated from `a` (strings
 * copied; the JSON tree lives in a temporary arena of
 * ingest__otlp_json_tree_cap(n) freed before returning).  ERR_INVALID
 * messages start with the JSON path of the bad value.  Returns
 * owned-by-arena *out; on failure *out is untouched.
 */
int ingest__otlp_json_decode(struct arena *a, const struct ingest_limits *lim, const void *p,
			     size_t n, Req **out, struct err_msg *msg);

#endif
