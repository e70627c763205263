// grpc_floor: the smallest unary echo this gRPC build allows, in the API style of the
// suite's p2p-latency (README "The floor"): a registered async unary method with raw
// byte-buffer messages on the server, polled by one thread; a generic stub on the client
// polling its own completion queue; the same channel arguments and per-call deadline. No
// payload is generated (one constant message is sent every time) and no echo is checked,
// so what it measures is gRPC's own round trip, the lower bound for p2p-latency.
//
//   grpc_floor serve --listen HOST:PORT    echo server; prints "listening HOST:PORT"
//   grpc_floor ping --ps HOST:PORT         round trips to a running server
//   grpc_floor run                         starts `serve` on loopback, then pings it
// Options of ping and run: --warmup S (0.5) --duration S (2) --timeout S (10)
// --message TEXT (10 bytes). Output: tf-grpc-bench format 1 with `benchmark: grpc-floor`
// and the last reply in the header (`reply:`). Exit status 2 on errors.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <absl/synchronization/mutex.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

namespace {

using Clock = std::chrono::steady_clock;
const char* kEcho = "/tfgrpcbench.PS/Echo";  // the suite's name, so either side can talk to it

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::map<std::string, std::string> options(int argc, char** argv) {
  std::map<std::string, std::string> o = {{"--listen", "127.0.0.1:0"}, {"--warmup", "0.5"},
                                          {"--duration", "2"}, {"--timeout", "10"},
                                          {"--message", "0123456789"}, {"--ps", ""}};
  for (int i = 2; i < argc; i += 2) {
    if (!o.count(argv[i]) || i + 1 >= argc)
      throw Error(std::string("option ") + argv[i] + ": unknown or without a value");
    o[argv[i]] = argv[i + 1];
  }
  return o;
}

double seconds(const std::map<std::string, std::string>& o, const char* name) {
  char* end = nullptr;
  double v = std::strtod(o.at(name).c_str(), &end);
  if (*end || !(v >= 0)) throw Error(std::string(name) + " " + o.at(name) + ": not a number of seconds");
  return v;
}

std::chrono::system_clock::time_point deadline(double timeout_s) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(timeout_s));
}

// ---------------------------------------------------------------- server

class EchoService : public grpc::Service {
 public:
  EchoService() {
    AddMethod(new grpc::internal::RpcServiceMethod(kEcho, grpc::internal::RpcMethod::NORMAL_RPC,
                                                   nullptr));
    MarkMethodAsync(0);
  }
  using grpc::Service::RequestAsyncUnary;
};

struct Call {  // one echo; the completion queue's tag
  Call(EchoService& s, grpc::ServerCompletionQueue* cq) : service(s), cq(cq) {
    s.RequestAsyncUnary(0, &ctx, &request, &writer, cq, cq, this);
  }
  void proceed(bool ok) {
    if (!requested || !ok) return delete this;  // finished, or shutting down
    requested = false;
    new Call(service, cq);
    writer.Finish(request, grpc::Status::OK, this);  // the request's slices go back
  }
  EchoService& service;
  grpc::ServerCompletionQueue* cq;
  bool requested = true;
  grpc::ServerContext ctx;
  grpc::ByteBuffer request;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> writer{&ctx};
};

int serve(const std::string& listen) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(&service);
  auto cq = builder.AddCompletionQueue();
  auto server = builder.BuildAndStart();
  if (!server || port == 0) throw Error("cannot listen on " + listen);
  std::atomic<bool> stopping{false};
  std::thread poller([&] {  // as the suite's PS: one thread, a 100 ms poll so it can stop
    new Call(service, cq.get());
    void* tag;
    bool ok;
    while (!stopping) {
      if (cq->AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::milliseconds(100)) ==
          grpc::CompletionQueue::GOT_EVENT)
        static_cast<Call*>(tag)->proceed(ok);
    }
    cq->Shutdown();
    while (cq->Next(&tag, &ok)) delete static_cast<Call*>(tag);
  });
  std::printf("listening %s:%d\n", listen.substr(0, listen.rfind(':')).c_str(), port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown(deadline(1));
  stopping = true;
  poller.join();
  return 0;
}

// ---------------------------------------------------------------- client

int ping(const std::map<std::string, std::string>& o) {
  const std::string& address = o.at("--ps");
  if (address.empty()) throw Error("--ps HOST:PORT is required");
  double timeout = seconds(o, "--timeout"), warmup = seconds(o, "--warmup"),
         duration = seconds(o, "--duration");
  grpc::ChannelArguments args;  // the suite's worker's channel arguments
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(deadline(timeout)))
    throw Error("cannot reach " + address + " within " + o.at("--timeout") + " s (--timeout)");
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  const std::string& message = o.at("--message");
  grpc::Slice slice(message.data(), message.size(), grpc::Slice::STATIC_SLICE);
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  auto call = [&] {
    grpc::ClientContext ctx;
    grpc::Status status;
    ctx.set_deadline(deadline(timeout));
    auto reader = stub.PrepareUnaryCall(&ctx, kEcho, request, &cq);
    reader->StartCall();
    reader->Finish(&reply, &status, nullptr);
    void* tag;
    bool ok;
    if (!cq.Next(&tag, &ok) || !ok || !status.ok())
      throw Error("call to " + address + " failed: " + status.error_message());
  };
  auto secs = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  for (auto until = Clock::now() + secs(warmup); Clock::now() < until;) call();
  std::vector<double> samples;
  auto t0 = Clock::now(), until = t0 + secs(duration);
  while (Clock::now() < until) {
    auto c0 = Clock::now();
    call();
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - c0).count());
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  if (samples.empty()) throw Error("no call completed within --duration " + o.at("--duration") + " s");
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (double v : samples) sum += v;
  std::size_t n = samples.size();
  grpc::Slice last;
  if (!reply.DumpToSingleSlice(&last).ok()) throw Error("cannot read the last reply");
  // the suite's output format (README "Output format"); no echo was verified, so 0
  std::printf("tf-grpc-bench-output: 1\nbenchmark: grpc-floor\nmode: non-serialized\nrpc: unary\n"
              "grpc_version: %s\nparameter_servers: 1\nps: %s\nworkers: 1\npayload_bytes: %zu\n"
              "warmup_s: %g\nduration_s: %g\nrepeats: 1\ntimeout_s: %g\nchannel_args: -\n"
              "reply: %.*s\n",
              grpc::Version().c_str(), address.c_str(), message.size(), warmup, duration, timeout,
              static_cast<int>(last.size()), reinterpret_cast<const char*>(last.begin()));
  std::printf("columns: kind repeat worker calls bytes seconds mean_us p50_us p99_us ser_us "
              "mb_per_s calls_per_s verified\n");
  std::printf("row total 1 all %zu %.0f %.6f %.3f %.3f %.3f 0.000 %.3f %.3f 0\nend: ok\n", n,
              static_cast<double>(n * message.size()), elapsed, sum / n, samples[(n - 1) / 2],
              samples[static_cast<std::size_t>(std::ceil(0.99 * n)) - 1],
              n * message.size() / 1e6 / elapsed, n / elapsed);
  return 0;
}

// `serve` as a child process (this same program), then `ping` against it from this one.
int run(const char* self, std::map<std::string, std::string> o) {
  int fds[2];
  if (pipe(fds) != 0) throw Error("pipe failed");
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) throw Error("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the run
    if (getppid() != parent) _exit(1);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    execl(self, self, "serve", "--listen", o.at("--listen").c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  std::string line;
  char ch;
  while (read(fds[0], &ch, 1) == 1 && ch != '\n') line += ch;
  close(fds[0]);
  int code = 2;
  try {
    if (line.rfind("listening ", 0) != 0) throw Error("the echo server did not start");
    o["--ps"] = line.substr(10);
    code = ping(o);
  } catch (...) {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    throw;
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // as tf_grpc_bench: Debian's Abseil leaves its mutex deadlock detector on (main.cc)
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  try {
    std::string command = argc > 1 ? argv[1] : "";
    if (command == "version") return std::printf("grpc_version: %s\n", grpc::Version().c_str()) < 0;
    auto o = options(argc, argv);
    if (command == "serve") return serve(o.at("--listen"));
    if (command == "ping") return ping(o);
    if (command == "run") {
      char self[PATH_MAX];
      ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
      if (n <= 0) throw Error("cannot find this program's path (/proc/self/exe)");
      self[n] = '\0';
      return run(self, o);
    }
    throw Error("command " + command + ": expected serve, ping, run or version");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
