/*
 * fixtures.h - source code of the programs the symbolize tests compile:
 * C with always_inline chains across a header, C++ with templates,
 * lambdas and the inlined standard library, a small Go program, and the
 * C++ pair of the DWZ integration test with the command that builds it.
 */
#ifndef UNHEX_TESTS_FIXTURES_H
#define UNHEX_TESTS_FIXTURES_H

static const char FIX_C_HEADER[] =
	"static inline __attribute__((always_inline)) int leaf(int x)\n"
	"{\n"
	"\treturn x * 7 + (x >> 3);\n"
	"}\n";

static const char FIX_C[] =
	"#include <stdio.h>\n"
	"#include \"inl.h\"\n"
	"static inline __attribute__((always_inline)) int mid(int x)\n"
	"{\n"
	"\tint s = 0;\n"
	"\tfor (int i = 0; i < x; i++)\n"
	"\t\ts += leaf(i ^ x);\n"
	"\treturn s;\n"
	"}\n"
	"static inline __attribute__((always_inline)) int top(int x)\n"
	"{\n"
	"\treturn mid(x) + mid(x + 1) * 3;\n"
	"}\n"
	"__attribute__((noinline)) int work(int x)\n"
	"{\n"
	"\treturn top(x) * 3 + leaf(x);\n"
	"}\n"
	"__attribute__((noinline)) static int helper(volatile int *p)\n"
	"{\n"
	"\treturn *p + work(*p);\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tvolatile int v = argc;\n"
	"\t(void)argv;\n"
	"\tprintf(\"%d\\n\", helper(&v));\n"
	"\treturn 0;\n"
	"}\n";

static const char FIX_CXX[] =
	"#include <algorithm>\n"
	"#include <functional>\n"
	"#include <map>\n"
	"#include <memory>\n"
	"#include <string>\n"
	"#include <vector>\n"
	"namespace ns {\n"
	"template <typename T> struct Acc {\n"
	"\tT v{};\n"
	"\t__attribute__((always_inline)) void add(T x) { v += x * 2; }\n"
	"};\n"
	"template <typename T> __attribute__((noinline)) T sum(const std::vector<T> &xs)\n"
	"{\n"
	"\tAcc<T> a;\n"
	"\tfor (auto x : xs)\n"
	"\t\ta.add(x);\n"
	"\treturn a.v;\n"
	"}\n"
	"} // namespace ns\n"
	"__attribute__((noinline)) int sorter(std::vector<int> &v)\n"
	"{\n"
	"\tstd::sort(v.begin(), v.end(), [](int a, int b) { return a % 7 < b % 7; });\n"
	"\treturn v[0];\n"
	"}\n"
	"__attribute__((noinline)) std::string mapper(int n)\n"
	"{\n"
	"\tstd::map<std::string, int> m;\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\tm[std::to_string(i)] = i;\n"
	"\tstd::string r;\n"
	"\tfor (auto &kv : m)\n"
	"\t\tr += kv.first;\n"
	"\treturn r;\n"
	"}\n"
	"struct Shape { virtual ~Shape() {} virtual double area() const = 0; };\n"
	"struct Sq : Shape { double s; explicit Sq(double x) : s(x) {} double area() const override { return s * s; } };\n"
	"__attribute__((noinline)) double areas(int n)\n"
	"{\n"
	"\tstd::vector<std::shared_ptr<Shape>> v;\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\tv.push_back(std::make_shared<Sq>(i));\n"
	"\tdouble t = 0;\n"
	"\tstd::for_each(v.begin(), v.end(), [&t](const std::shared_ptr<Shape> &s) { t += s->area(); });\n"
	"\treturn t;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\t(void)argv;\n"
	"\tstd::vector<int> v;\n"
	"\tfor (int i = 0; i < argc * 100; i++)\n"
	"\t\tv.push_back(i * 31 % 17);\n"
	"\tstd::function<int(int)> f = [&](int x) { return x + sorter(v); };\n"
	"\treturn (int)(ns::sum(v) + ns::sum(std::vector<double>{1.0}) + f(argc) +\n"
	"\t\t     mapper(argc).size() + areas(argc));\n"
	"}\n";

static const char FIX_GO[] =
	"package main\n"
	"\n"
	"import \"fmt\"\n"
	"\n"
	"type acc struct{ v int }\n"
	"\n"
	"func (a *acc) add(x int) { a.v += x * 2 }\n"
	"\n"
	"func sum(xs []int) int {\n"
	"\tvar a acc\n"
	"\tfor _, x := range xs {\n"
	"\t\ta.add(x)\n"
	"\t}\n"
	"\treturn a.v\n"
	"}\n"
	"\n"
	"//go:noinline\n"
	"func work(n int) int {\n"
	"\txs := make([]int, n)\n"
	"\tfor i := range xs {\n"
	"\t\txs[i] = i * 3\n"
	"\t}\n"
	"\treturn sum(xs)\n"
	"}\n"
	"\n"
	"func main() { fmt.Println(work(10)) }\n";

/*
 * The C++ programs of tests/integration/sym_dwz.sh (kept in step with it):
 * two programs sharing a header of templates and inline functions, so `dwz
 * -m` moves the shared declarations, abstract instances and the
 * specifications of out-of-line template copies into the alt file.  Both
 * have the same timed main(): setup, a loop over v until argv[1] seconds
 * (default 1) have passed, acc printed.
 */
#define FIX_DWZ_MAIN_BEGIN \
	"int main(int argc, char **argv)\n" \
	"{\n" \
	"\tdouble secs = argc > 1 ? atof(argv[1]) : 1.0;\n" \
	"\tauto t0 = std::chrono::steady_clock::now();\n" \
	"\tlong acc = 0;\n"
#define FIX_DWZ_LOOP_BEGIN \
	"\twhile (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {\n" \
	"\t\tfor (size_t i = 0; i < v.size(); i++)\n"
#define FIX_DWZ_MAIN_END \
	"\t}\n" \
	"\tstd::printf(\"%ld\\n\", acc);\n" \
	"\treturn 0;\n" \
	"}\n"

static const char FIX_DWZ_HH[] =
	"#include <algorithm>\n"
	"#include <map>\n"
	"#include <string>\n"
	"#include <vector>\n"
	"namespace dwz {\n"
	"template <typename T> struct Acc {\n"
	"\tT v{};\n"
	"\t__attribute__((always_inline)) void add(T x) { v += x * 2 + (x >> 1); }\n"
	"};\n"
	"template <typename T> __attribute__((noinline)) T total(const std::vector<T> &xs)\n"
	"{\n"
	"\tAcc<T> a;\n"
	"\tfor (auto x : xs)\n"
	"\t\ta.add(x);\n"
	"\treturn a.v;\n"
	"}\n"
	"inline size_t keys(int n)\n"
	"{\n"
	"\tstd::map<std::string, int> m;\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\tm[std::to_string(i)] = i;\n"
	"\tsize_t r = 0;\n"
	"\tfor (auto &kv : m)\n"
	"\t\tr += kv.first.size();\n"
	"\treturn r;\n"
	"}\n"
	"} // namespace dwz\n";

static const char FIX_DWZ_X1[] =
	"#include <chrono>\n"
	"#include <cstdio>\n"
	"#include <cstdlib>\n"
	"#include \"shared.hh\"\n"
	"__attribute__((noinline)) int order(std::vector<int> &v)\n"
	"{\n"
	"\tstd::sort(v.begin(), v.end(), [](int a, int b) { return a % 7919 < b % 7919; });\n"
	"\treturn v[0];\n"
	"}\n"
	FIX_DWZ_MAIN_BEGIN
	"\tstd::vector<int> v(20000);\n"
	FIX_DWZ_LOOP_BEGIN
	"\t\t\tv[i] = (int)(i * 2654435761u + (unsigned)acc);\n"
	"\t\tacc += order(v) + dwz::total<long>(std::vector<long>(v.begin(), v.end())) +\n"
	"\t\t       (long)dwz::keys(1500);\n"
	FIX_DWZ_MAIN_END;

static const char FIX_DWZ_X2[] =
	"#include <chrono>\n"
	"#include <cstdio>\n"
	"#include <cstdlib>\n"
	"#include <functional>\n"
	"#include \"shared.hh\"\n"
	"__attribute__((noinline)) long reverse_order(std::vector<long> &v)\n"
	"{\n"
	"\tstd::sort(v.begin(), v.end(), [](long a, long b) { return a % 104729 > b % 104729; });\n"
	"\treturn v[0];\n"
	"}\n"
	FIX_DWZ_MAIN_BEGIN
	"\tstd::vector<long> v(20000);\n"
	"\tstd::function<long(int)> f = [](int k) { return (long)dwz::keys(k); };\n"
	FIX_DWZ_LOOP_BEGIN
	"\t\t\tv[i] = (long)(i * 40503u + (unsigned long)acc);\n"
	"\t\tacc += reverse_order(v) + dwz::total<long>(v) + f(1200);\n"
	FIX_DWZ_MAIN_END;

/*
 * The shell command (run in the directory holding shared.hh, dwzs_x1.cc
 * and dwzs_x2.cc) that builds the pair with build IDs, splits each
 * program's debug info into NAME.debug and lets `dwz -m` move what they
 * share into dwzs_common.debug (its .gnu_debugaltlink names a path that
 * does not exist: the tests hand the alt file over themselves).  It fails
 * unless dwzs_x1.debug refers into the alt file and imports partial units.
 */
#define FIX_DWZ_PAIR_BUILD \
	"for p in dwzs_x1 dwzs_x2; do " \
	"g++ -g -O2 -Wl,--build-id -o $p $p.cc && " \
	"objcopy --only-keep-debug $p $p.debug || exit 1; done && " \
	"dwz -m dwzs_common.debug -M /nonexistent-unhex-dwz/dwzs.debug " \
	"dwzs_x1.debug dwzs_x2.debug && " \
	"readelf --debug-dump=info dwzs_x1.debug 2>/dev/null " \
	"| grep -q 'DW_AT_specification: <alt 0x' && " \
	"readelf --debug-dump=info dwzs_x1.debug 2>/dev/null " \
	"| grep -q DW_TAG_imported_unit"

#endif
