// The versioned text output (README.md "Output format"): a header of `key: value` lines
// with every parameter, a `columns:` line, `row` lines, and `end: ok`.
#include <cstdio>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "bench.h"

namespace tgb {

namespace {
const char* kColumns =
    "kind repeat worker calls bytes seconds mean_us p50_us p99_us ser_us mb_per_s "
    "calls_per_s verified";

template <class T, class F>
std::string joined(const std::vector<T>& items, F f) {
  std::ostringstream s;
  for (std::size_t i = 0; i < items.size(); ++i) s << (i ? "," : "") << f(items[i]);
  return s.str();
}
}  // namespace

void print_header(const Options& o, const std::vector<Buffer>& layout,
                  const std::vector<std::string>& ps) {
  const PayloadOptions& p = o.payload;
  double total = 0;
  for (const Buffer& b : layout) total += static_cast<double>(b.bytes);
  std::printf("tf-grpc-bench-output: 1\n");
  std::printf("benchmark: %s\n", o.command == "run" || o.command == "payload"
                                     ? o.benchmark.c_str() : o.command.c_str());
  std::printf("mode: %s\n", o.command.rfind("tcp-", 0) == 0 ? "raw-tcp" : o.mode.c_str());
  std::printf("rpc: %s\n", o.command.rfind("tcp-", 0) == 0 ? "-" : o.rpc.c_str());
  // the gRPC library this process runs with (the system's or GRPC_ROOT's); - for raw TCP
  std::printf("grpc_version: %s\n", o.command.rfind("tcp-", 0) == 0 ? "-" : grpc::Version().c_str());
  std::printf("parameter_servers: %ld\n", o.parameter_servers);
  std::printf("ps: %s\n", ps.empty() ? "-" : joined(ps, [](const std::string& a) { return a; }).c_str());
  std::printf("workers: %ld\n", o.workers);
  std::printf("scheme: %s\n", p.scheme.c_str());
  std::printf("categories: %s\n",
              joined(p.categories, [](Category c) { return category_spec(c).name; }).c_str());
  std::printf("small_bytes: %zu\nmedium_bytes: %zu\nlarge_bytes: %zu\n", p.sizes[0], p.sizes[1], p.sizes[2]);
  std::printf("skew_bias: %s\n", category_spec(p.skew_bias).name);
  std::printf("skew_mix: %s\n", joined(p.skew_mix, [](int v) { return v; }).c_str());
  std::printf("seed: %llu\n", static_cast<unsigned long long>(p.seed));
  std::printf("buffers: %zu\n", layout.size());
  std::printf("buffer_categories: %s\n",
              joined(layout, [](const Buffer& b) { return category_spec(b.category).letter; }).c_str());
  std::printf("buffer_sizes: %s\n", joined(layout, [](const Buffer& b) { return b.bytes; }).c_str());
  std::printf("payload_bytes: %.0f\n", total);
  std::printf("warmup_s: %g\nduration_s: %g\nrepeats: %ld\ntimeout_s: %g\n", o.warmup_s,
              o.duration_s, o.repeats, o.timeout_s);
  std::printf("channel_args: %s\n", o.channel_args.empty() ? "-" :
      joined(o.channel_args, [](const auto& kv) { return kv.first + "=" + kv.second; }).c_str());
  std::printf("columns: %s\n", kColumns);
  std::fflush(stdout);
}

void print_row(const char* kind, long repeat, const std::string& worker, const Result& r,
               double mb, double cps) {
  std::printf("row %s %ld %s %ld %.0f %.6f %.3f %.3f %.3f %.3f %.3f %.3f %ld\n", kind, repeat,
              worker.c_str(), r.calls, r.bytes, r.seconds, r.mean_us, r.p50_us, r.p99_us, r.ser_us,
              mb, cps, r.verified);
  std::fflush(stdout);
}

void print_end() {
  std::printf("end: ok\n");
  std::fflush(stdout);
}

std::string result_line(const Result& r) {
  std::ostringstream s;
  s.precision(17);
  s << "result " << r.calls << " " << r.bytes << " " << r.seconds << " " << r.mean_us << " "
    << r.p50_us << " " << r.p99_us << " " << r.ser_us << " " << r.verified;
  return s.str();
}

Result parse_result_line(const std::string& line) {
  std::istringstream s(line);
  std::string tag;
  Result r;
  s >> tag >> r.calls >> r.bytes >> r.seconds >> r.mean_us >> r.p50_us >> r.p99_us >> r.ser_us >>
      r.verified;
  if (tag != "result" || s.fail()) throw Error("worker printed an unreadable result: " + line);
  return r;
}

}  // namespace tgb
