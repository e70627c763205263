// The physical limit on the same path: raw TCP round trips (ping-pong) and a raw TCP
// stream between two processes over loopback, with the same message sizes, warm-up and
// duration options as the gRPC benchmarks, and the same output format.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "bench.h"

namespace tgb {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  throw Error(what + ": " + std::strerror(errno));
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail("tcp write");
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

// Reads exactly n bytes; false on a clean end of stream before the first byte.
bool read_all(int fd, char* p, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, p + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) fail("tcp read");
    if (k == 0) {
      if (got == 0) return false;
      throw Error("tcp read: stream ended inside a message");
    }
    got += static_cast<std::size_t>(k);
  }
  return true;
}

void nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Server side, in a forked child: echo messages (ping-pong) or count a stream's bytes.
[[noreturn]] void serve(int listener, bool pingpong, std::size_t size) {
  int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) _exit(2);
  nodelay(fd);
  std::string buf(std::max<std::size_t>(size, 1 << 20), '\0');
  if (pingpong) {
    while (read_all(fd, &buf[0], size)) write_all(fd, buf.data(), size);
  } else {
    uint64_t total = 0;
    ssize_t k;
    while ((k = read(fd, &buf[0], buf.size())) > 0) total += static_cast<uint64_t>(k);
    write_all(fd, reinterpret_cast<const char*>(&total), sizeof total);
  }
  close(fd);
  _exit(0);
}

Result measure(const Options& o, bool pingpong, std::size_t size, std::string* address) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;  // any free port
  if (inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1)
    throw Error("--host " + o.host + ": not an IPv4 address");
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, 1) != 0)
    fail("bind/listen on " + o.host);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  *address = o.host + ":" + std::to_string(ntohs(addr.sin_port));
  pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    serve(listener, pingpong, size);
  }
  close(listener);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail("connect to " + *address);
  nodelay(fd);
  std::string out(size, 'x'), in(size, '\0');
  auto secs = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  Result r;
  uint64_t sent = 0;
  auto until = Clock::now() + secs(o.warmup_s);
  bool measuring = false;
  std::vector<double> samples;
  Clock::time_point t0;
  while (true) {
    if (Clock::now() >= until) {
      if (measuring) break;
      measuring = true;
      t0 = Clock::now();
      until = t0 + secs(o.duration_s);
    }
    auto c0 = Clock::now();
    write_all(fd, out.data(), size);
    sent += size;
    if (pingpong) {
      if (!read_all(fd, &in[0], size)) throw Error("tcp echo server closed the connection");
      if (measuring)
        samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - c0).count());
    }
    if (measuring) {
      r.calls++;
      r.bytes += static_cast<double>(size);
    }
  }
  shutdown(fd, SHUT_WR);
  if (!pingpong) {  // the stream ends when the server has counted every byte
    uint64_t counted = 0;
    if (!read_all(fd, reinterpret_cast<char*>(&counted), sizeof counted) || counted != sent)
      throw Error("tcp stream: the server counted " + std::to_string(counted) + " bytes, " +
                  std::to_string(sent) + " were sent");
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.verified = r.calls;
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (pingpong && !samples.empty()) {
    std::sort(samples.begin(), samples.end());
    double sum = 0;
    for (double v : samples) sum += v;
    r.mean_us = sum / samples.size();
    r.p50_us = samples[(samples.size() - 1) / 2];
    r.p99_us = samples[static_cast<std::size_t>(std::ceil(0.99 * samples.size())) - 1];
  }
  return r;
}

}  // namespace

int run_tcp(const Options& o) {
  signal(SIGPIPE, SIG_IGN);
  bool pingpong = o.command == "tcp-pingpong";
  std::vector<Buffer> layout = make_payload(o.payload);
  std::size_t size = 0;
  for (const Buffer& b : layout) size += b.bytes;  // one message of the payload's size
  std::vector<Result> results;
  std::string address;
  for (long rep = 1; rep <= o.repeats; ++rep) results.push_back(measure(o, pingpong, size, &address));
  print_header(o, layout, {address});
  for (long rep = 1; rep <= o.repeats; ++rep) {
    const Result& r = results[rep - 1];
    print_row("total", rep, "all", r, r.bytes / 1e6 / r.seconds, r.calls / r.seconds);
  }
  print_end();
  return 0;
}

}  // namespace tgb
