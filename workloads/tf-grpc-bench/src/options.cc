// Command line of tf_grpc_bench: the parameters of the paper's Table 2 and the payload
// options of Sec. 3.2. Every bad value is an Error naming the option and the reason.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "bench.h"

namespace tgb {

std::string usage() {
  return R"(usage: tf_grpc_bench [COMMAND] [--option value ...]

commands:
  run           (default) start the parameter servers on loopback (or use --ps) and the
                workers, measure, print the results
  ps            serve as one parameter server on --listen HOST:PORT until SIGTERM
  worker        one worker against --ps (used by run; prints one result line)
  payload       print the header with the generated payload, without running
  tcp-pingpong  raw TCP round trips of one --sizes message on loopback (baseline)
  tcp-stream    raw TCP stream of --sizes chunks on loopback (baseline)

benchmark (Table 2; defaults in brackets):
  --benchmark p2p-latency|p2p-bandwidth|ps-throughput   [p2p-latency]
  --mode non-serialized|serialized                     [non-serialized]
  --rpc unary|streaming  one unary RPC per payload, as TensorFlow's RecvTensor [unary];
                         streaming: payloads as messages of one open stream per PS
                         (p2p benchmarks, non-serialized mode only)
  --host ADDR            address local parameter servers listen on [127.0.0.1]
  --port N               port of the first parameter server; 0 = any free port [50001]
  --parameter-servers N  [1]        --workers N  [1]   (p2p benchmarks: 1 and 1)
  --ps HOST:PORT,...     running parameter servers to use instead of starting them
  --warmup S  [2]   --duration S  [10]   --repeats N  [1]
  --timeout S            connect and per-call deadline [10]
payload (Sec. 3.2, Table 1):
  --scheme uniform|random|skew|custom  [uniform]
  --buffers N            iovec buffers per payload [10]
  --categories LIST      e.g. small,medium,large or L [small,medium,large]
  --small-bytes N [10]  --medium-bytes N [10240]  --large-bytes N [1048576]
  --skew-bias small|medium|large [large]   --skew-mix P1,P2,P3 [60,30,10]
  --sizes N,N,...        custom: explicit buffer sizes
  --counts small=N,medium=N,large=N   custom: buffers per category at their sizes
  --seed N               random scheme and buffer contents [1]
transport:
  --channel-arg NAME=VALUE   a gRPC channel argument for both ends (repeatable)
)";
}

namespace {

double to_double(const std::string& name, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || errno || !std::isfinite(d))
    throw Error("--" + name + " '" + v + "': not a number");
  return d;
}

long to_long(const std::string& name, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno) throw Error("--" + name + " '" + v + "': not an integer");
  return n;
}

std::size_t to_size(const std::string& name, const std::string& v) {
  long n = to_long(name, v);
  if (n < 0) throw Error("--" + name + " " + v + ": a size cannot be negative");
  return static_cast<std::size_t>(n);
}

std::vector<std::string> split(const std::string& v, char sep) {
  std::vector<std::string> out;
  std::stringstream s(v);
  std::string item;
  while (std::getline(s, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

double positive(const std::string& name, double v, bool zero_ok) {
  if (v < 0 || (!zero_ok && v == 0))
    throw Error("--" + name + " " + std::to_string(v) + ": must be " +
                (zero_ok ? "zero or more" : "more than zero"));
  return v;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  int i = 1;
  if (i < argc && argv[i][0] != '-') o.command = argv[i++];
  const std::string commands[] = {"run", "ps", "worker", "payload", "tcp-pingpong", "tcp-stream"};
  bool known = false;
  for (const auto& c : commands) known = known || c == o.command;
  if (!known) throw Error("unknown command '" + o.command + "'\n" + usage());
  o.forwarded.assign(argv + i, argv + argc);
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw Error("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2), value;
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw Error("--" + name + " needs a value");
      value = argv[++i];
    }
    PayloadOptions& p = o.payload;
    if (name == "benchmark") {
      if (value != "p2p-latency" && value != "p2p-bandwidth" && value != "ps-throughput")
        throw Error("unknown benchmark '" + value +
                    "' (expected p2p-latency, p2p-bandwidth or ps-throughput)");
      o.benchmark = value;
    } else if (name == "mode") {
      if (value != "non-serialized" && value != "serialized")
        throw Error("unknown mode '" + value + "' (expected non-serialized or serialized)");
      o.mode = value;
    } else if (name == "rpc") {
      if (value != "unary" && value != "streaming")
        throw Error("unknown rpc '" + value + "' (expected unary or streaming)");
      o.rpc = value;
    } else if (name == "host") {
      o.host = value;
    } else if (name == "port") {
      long port = to_long(name, value);
      if (port < 0 || port > 65535) throw Error("--port " + value + ": not a port number");
      o.port = static_cast<int>(port);
    } else if (name == "parameter-servers") {
      o.parameter_servers = to_long(name, value);
      if (o.parameter_servers < 1) throw Error("--parameter-servers " + value + ": needs at least one");
    } else if (name == "workers") {
      o.workers = to_long(name, value);
      if (o.workers < 1) throw Error("--workers " + value + ": needs at least one");
    } else if (name == "ps") {
      o.ps_addresses = split(value, ',');
      if (o.ps_addresses.empty()) throw Error("--ps: no address given");
    } else if (name == "listen") {
      o.listen = value;
    } else if (name == "warmup") {
      o.warmup_s = positive(name, to_double(name, value), true);
    } else if (name == "duration") {
      o.duration_s = positive(name, to_double(name, value), false);
    } else if (name == "repeats") {
      o.repeats = to_long(name, value);
      if (o.repeats < 1) throw Error("--repeats " + value + ": needs at least one");
    } else if (name == "timeout") {
      o.timeout_s = positive(name, to_double(name, value), false);
    } else if (name == "worker-index") {
      o.worker_index = to_long(name, value);
    } else if (name == "scheme") {
      p.scheme = value;
    } else if (name == "buffers") {
      p.buffers = to_long(name, value);
    } else if (name == "categories") {
      p.categories.clear();
      for (const auto& c : split(value, ',')) p.categories.push_back(parse_category(c));
    } else if (name == "small-bytes") {
      p.sizes[0] = to_size(name, value);
    } else if (name == "medium-bytes") {
      p.sizes[1] = to_size(name, value);
    } else if (name == "large-bytes") {
      p.sizes[2] = to_size(name, value);
    } else if (name == "skew-bias") {
      p.skew_bias = parse_category(value);
    } else if (name == "skew-mix") {
      p.skew_mix.clear();
      for (const auto& s : split(value, ',')) p.skew_mix.push_back(static_cast<int>(to_long(name, s)));
    } else if (name == "sizes") {
      p.custom_sizes.clear();
      for (const auto& s : split(value, ',')) p.custom_sizes.push_back(to_size(name, s));
    } else if (name == "counts") {
      for (const auto& kv : split(value, ',')) {
        auto at = kv.find('=');
        if (at == std::string::npos) throw Error("--counts '" + kv + "': expected CATEGORY=N");
        long n = to_long(name, kv.substr(at + 1));
        if (n < 0) throw Error("--counts '" + kv + "': a count cannot be negative");
        p.custom_counts[static_cast<int>(parse_category(kv.substr(0, at)))] = n;
      }
    } else if (name == "channel-arg") {
      auto at = value.find('=');
      if (at == std::string::npos || at == 0)
        throw Error("--channel-arg '" + value + "': expected NAME=VALUE");
      o.channel_args.push_back({value.substr(0, at), value.substr(at + 1)});
    } else if (name == "seed") {
      p.seed = static_cast<uint64_t>(to_long(name, value));
    } else {
      throw Error("unknown option --" + name + " (see --help)");
    }
  }
  if (o.benchmark != "ps-throughput" && o.command != "ps" &&
      (o.workers != 1 || o.parameter_servers != 1 || o.ps_addresses.size() > 1))
    throw Error(o.benchmark + " is point-to-point: one parameter server and one worker "
                "(use ps-throughput for several)");
  if (o.rpc == "streaming" && o.benchmark == "ps-throughput")
    throw Error("--rpc streaming: only for p2p-latency and p2p-bandwidth (ps-throughput counts "
                "RPC calls)");
  if (o.rpc == "streaming" && o.mode == "serialized")
    throw Error("--rpc streaming: only with --mode non-serialized (serialized mode times the "
                "PS's decoding per call, which a stream does not report)");
  if (!o.ps_addresses.empty()) o.parameter_servers = static_cast<long>(o.ps_addresses.size());
  if (o.command == "ps" && o.listen.empty()) throw Error("ps needs --listen HOST:PORT");
  if (o.command == "worker" && o.ps_addresses.empty()) throw Error("worker needs --ps");
  if (o.command != "ps") validate_payload_options(o.payload);
  return o;
}

}  // namespace tgb
