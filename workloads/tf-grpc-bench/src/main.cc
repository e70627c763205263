// tf_grpc_bench: TF-gRPC-Bench (p2p-latency, p2p-bandwidth, ps-throughput) and its raw TCP
// baseline. Exit status 0 on success, 2 for bad options or a failed run (message on stderr).
#include <malloc.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <absl/synchronization/mutex.h>

#include "bench.h"

int main(int argc, char** argv) {
  // Keep freed memory in the heap: every received payload would otherwise be fresh
  // mmap'ed pages, page-faulted in on each call (a pooling allocator, as TensorFlow's).
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Debian builds Abseil without NDEBUG, which leaves its mutex deadlock detector on: a
  // debugging aid that records every lock gRPC takes in a global graph (a release build of
  // Abseil, as TensorFlow links, has it off). Only gRPC's calls use Abseil mutexes.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(tgb::usage().c_str(), stdout);
      return 0;
    }
  }
  try {
    tgb::Options o = tgb::parse_options(argc, argv);
    if (o.command == "ps") return tgb::run_ps(o);
    if (o.command == "worker") return tgb::run_worker(o);
    if (o.command == "tcp-pingpong" || o.command == "tcp-stream") return tgb::run_tcp(o);
    if (o.command == "payload") {
      tgb::print_header(o, tgb::make_payload(o.payload), o.ps_addresses);
      return 0;
    }
    char self[PATH_MAX];  // the workers and servers are this same program
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
      std::fprintf(stderr, "error: cannot find this program's path (/proc/self/exe)\n");
      return 2;
    }
    self[n] = '\0';
    return tgb::run_local(o, self);
  } catch (const tgb::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
