// The three TF-gRPC-Bench benchmarks over gRPC: the parameter server, the worker, and
// the local run that starts both kinds of process on loopback.
//
// Non-serialized mode sends a payload as a grpc::ByteBuffer whose slices are the iovec
// buffers themselves (the byte-buffer path, no protobuf); serialized mode encodes the
// buffers into one protobuf message (proto/payload.proto) and times encoding and decoding.
// Both sides drive their own completion queue, so no thread hand-off adds to a round trip.
// A call is a unary RPC by default, as TensorFlow's tensor transfer (RecvTensor) is;
// `--rpc streaming` instead sends every payload as one message of a bidirectional stream
// per worker-PS pair, which has no per-call setup (labelled as such in the output).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include "bench.h"
#include "payload.pb.h"

namespace tgb {

namespace {

using Clock = std::chrono::steady_clock;
const char* kEcho = "/tfgrpcbench.PS/Echo";  // p2p-latency: the PS sends the payload back
const char* kAck = "/tfgrpcbench.PS/Ack";    // p2p-bandwidth, ps-throughput: checksum reply
const char* kEchoStream = "/tfgrpcbench.PS/EchoStream";  // --rpc streaming: one reply a message
const char* kAckStream = "/tfgrpcbench.PS/AckStream";
const char* kSerNs = "tgb-ser-ns";           // trailing metadata: the PS's protobuf time

double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

grpc::ByteBuffer ack_buffer(const Checksum& sum) {
  uint64_t words[2] = {sum.digest(), sum.length()};
  grpc::Slice slice(words, sizeof words);
  return grpc::ByteBuffer(&slice, 1);
}

void add(Checksum& sum, const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) throw Error("cannot read a received byte buffer");
  for (const auto& s : slices) sum.update(s.begin(), s.size());
}

void add(Checksum& sum, const tfgrpcbench::Payload& msg) {
  for (const auto& b : msg.buffers()) sum.update(b.data(), b.size());
}

// The user's --channel-arg values for both ends (integers when they parse as one).
template <class F>
void apply_channel_args(const Options& o, F set) {
  for (const auto& [name, value] : o.channel_args) set(name, value);
}

bool as_int(const std::string& v, int* out) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end) return false;
  *out = static_cast<int>(n);
  return true;
}

// ---------------------------------------------------------------- parameter server

// The PS's reply to one payload: the echo, or the checksum of what arrived.
grpc::Status handle(bool echo, grpc::ByteBuffer& request, grpc::ByteBuffer* reply,
                    grpc::ServerContext& ctx, bool serialized) {
  if (!serialized) {
    if (echo) {
      *reply = request;  // the same slices go back: an echo without copies
    } else {
      Checksum sum;
      add(sum, request);
      *reply = ack_buffer(sum);
    }
    return grpc::Status::OK;
  }
  auto t0 = Clock::now();
  tfgrpcbench::Payload msg;
  grpc::Status st = grpc::SerializationTraits<tfgrpcbench::Payload>::Deserialize(&request, &msg);
  if (!st.ok()) return st;
  if (echo) {
    bool own = false;
    st = grpc::SerializationTraits<tfgrpcbench::Payload>::Serialize(msg, reply, &own);
    if (!st.ok()) return st;
    ctx.AddTrailingMetadata(kSerNs, std::to_string(std::llround(since_us(t0) * 1000)));
  } else {
    Checksum sum;
    add(sum, msg);
    *reply = ack_buffer(sum);
  }
  return grpc::Status::OK;
}

// Echo and Ack as registered async unary methods with raw byte-buffer messages, the way
// TensorFlow's worker service serves RecvTensor: gRPC hands over the call together with its
// request, and the reply, its headers and the status leave in one batch.
class UnaryService : public grpc::Service {
 public:
  UnaryService() {
    int index = 0;
    for (const char* name : {kEcho, kAck}) {  // index 0 and 1
      AddMethod(new grpc::internal::RpcServiceMethod(
          name, grpc::internal::RpcMethod::NORMAL_RPC, nullptr));
      MarkMethodAsync(index++);
    }
  }
  void request(int method, grpc::ServerContext* ctx, grpc::ByteBuffer* request,
               grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer,
               grpc::ServerCompletionQueue* cq, void* tag) {
    RequestAsyncUnary(method, ctx, request, writer, cq, cq, tag);
  }
};

struct Services {
  UnaryService unary;
  grpc::AsyncGenericService generic;  // the streams (--rpc streaming) and unknown methods
};

// A call in progress on the PS's completion queue (the queue's tag).
struct ServerCall {
  virtual ~ServerCall() = default;
  virtual void proceed(bool ok) = 0;  // the next step; deletes the call when it is done
};

struct UnaryCall : ServerCall {
  UnaryCall(Services& s, grpc::ServerCompletionQueue* cq, int method, bool serialized)
      : services(s), cq(cq), method(method), serialized(serialized) {
    s.unary.request(method, &ctx, &request, &writer, cq, this);
  }
  Services& services;
  grpc::ServerCompletionQueue* cq;
  int method;  // 0: Echo, 1: Ack
  bool serialized, requested = true;
  grpc::ServerContext ctx;
  grpc::ByteBuffer request, reply;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> writer{&ctx};

  void proceed(bool ok) override {
    if (!requested || !ok) return delete this;  // finished, or shutting down
    requested = false;
    new UnaryCall(services, cq, method, serialized);  // ready for the next call
    grpc::Status st = handle(method == 0, request, &reply, ctx, serialized);
    if (st.ok())
      writer.Finish(reply, st, this);
    else
      writer.FinishWithError(st, this);
  }
};

struct StreamCall : ServerCall {
  StreamCall(Services& s, grpc::ServerCompletionQueue* cq) : services(s), cq(cq) {
    s.generic.RequestCall(&ctx, &stream, cq, cq, this);
  }
  enum State { kRequested, kReading, kWriting, kFinishing } state = kRequested;
  Services& services;
  grpc::ServerCompletionQueue* cq;
  bool echo = false;
  grpc::GenericServerContext ctx;
  grpc::GenericServerAsyncReaderWriter stream{&ctx};
  grpc::ByteBuffer request, reply;

  void proceed(bool ok) override {
    switch (state) {
      case kRequested:
        if (!ok) return delete this;  // shutting down
        new StreamCall(services, cq);
        if (ctx.method() != kEchoStream && ctx.method() != kAckStream) {
          state = kFinishing;
          return stream.Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                            "no method " + ctx.method()), this);
        }
        echo = ctx.method() == kEchoStream;
        state = kReading;
        return stream.Read(&request, this);
      case kReading: {
        if (!ok) {  // the worker has no more messages
          state = kFinishing;
          return stream.Finish(grpc::Status::OK, this);
        }
        handle(echo, request, &reply, ctx, false);  // streams are non-serialized only
        state = kWriting;
        return stream.Write(reply, this);
      }
      case kWriting:
        if (!ok) {  // the worker went away
          state = kFinishing;
          return stream.Finish(grpc::Status::CANCELLED, this);
        }
        state = kReading;
        return stream.Read(&request, this);
      case kFinishing:
        return delete this;
    }
  }
};

// The PS's only thread that starts operations on `cq`. Once `stopping` is set (after the
// server has shut down) it shuts the queue down itself, so no operation can begin on a
// shut-down queue, and drops what is left.
void serve(grpc::ServerCompletionQueue* cq, Services* services, bool serialized,
           const std::atomic<bool>* stopping) {
  for (int method = 0; method < 2; ++method) new UnaryCall(*services, cq, method, serialized);
  new StreamCall(*services, cq);
  void* tag;
  bool ok;
  while (!stopping->load()) {
    auto status =
        cq->AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    if (status == grpc::CompletionQueue::GOT_EVENT) static_cast<ServerCall*>(tag)->proceed(ok);
  }
  cq->Shutdown();
  while (cq->Next(&tag, &ok)) delete static_cast<ServerCall*>(tag);
}

// ---------------------------------------------------------------- worker

class Worker {
 public:
  explicit Worker(const Options& o)
      : o_(o), serialized_(o.mode == "serialized"), streaming_(o.rpc == "streaming"),
        layout_(make_payload(o.payload)), data_(fill_buffers(layout_, o.payload.seed)) {
    for (const auto& d : data_) {
      slices_.emplace_back(d.data(), d.size(), grpc::Slice::STATIC_SLICE);
      expected_.update(d.data(), d.size());
    }
    for (const auto& address : o.ps_addresses) {
      ps_list_ += (ps_list_.empty() ? "" : ",") + address;
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(-1);
      args.SetMaxSendMessageSize(-1);
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
      apply_channel_args(o, [&](const std::string& n, const std::string& v) {
        int i;
        if (as_int(v, &i)) args.SetInt(n, i); else args.SetString(n, v);
      });
      auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
      if (!channel->WaitForConnected(deadline()))
        throw Error("cannot reach parameter server " + address + " within " +
                    fmt(o.timeout_s) + " s (--timeout)");
      stubs_.push_back(std::make_unique<grpc::GenericStub>(channel));
      if (streaming_) open_stream(*stubs_.back(), address);
    }
  }

  // Ends the streams, cleanly after a finished run (the PS finishes each when its reads
  // end), by cancelling them after a failure; then drains the completion queue.
  ~Worker() {
    for (auto& st : streams_) {
      if (finished_) {
        st->rw->WritesDone(st.get());
        st->rw->Finish(&st->status, st.get());
      } else {
        st->ctx.TryCancel();
      }
    }
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.AsyncNext(&tag, &ok, deadline()) == grpc::CompletionQueue::GOT_EVENT) {
    }
  }

  Result run() {
    bool latency = o_.benchmark == "p2p-latency";
    auto until = Clock::now() + secs(o_.warmup_s);
    while (Clock::now() < until) round(latency, nullptr);
    Result r;
    std::vector<double> samples;
    auto t0 = Clock::now();
    until = t0 + secs(o_.duration_s);
    while (Clock::now() < until) {
      Sample s = round(latency, &r);
      if (latency) samples.push_back(s.us);
      r.ser_us += s.ser_us;
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    finished_ = true;
    if (r.calls == 0) throw Error("no call completed within --duration " + fmt(o_.duration_s) + " s");
    r.ser_us /= r.calls;
    if (latency) {
      std::sort(samples.begin(), samples.end());
      double sum = 0;
      for (double v : samples) sum += v;
      r.mean_us = sum / samples.size();
      r.p50_us = samples[(samples.size() - 1) / 2];
      r.p99_us = samples[static_cast<std::size_t>(std::ceil(0.99 * samples.size())) - 1];
    }
    return r;
  }

 private:
  struct Sample {
    double us = 0, ser_us = 0;
  };
  struct Stream {  // --rpc streaming: one open bidirectional stream per PS
    grpc::ClientContext ctx;
    grpc::ByteBuffer reply;
    grpc::Status status;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> rw;
  };
  struct Pending {
    grpc::ClientContext ctx;
    grpc::ByteBuffer reply;
    grpc::Status status;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
  };

  static std::string fmt(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  static Clock::duration secs(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  std::chrono::system_clock::time_point deadline() const {
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(
               std::chrono::duration<double>(o_.timeout_s));
  }

  // Waits for the next completion of `what` within --timeout; false if the operation failed.
  bool next(const std::string& what) {
    void* tag;
    bool ok;
    if (cq_.AsyncNext(&tag, &ok, deadline()) != grpc::CompletionQueue::GOT_EVENT)
      throw Error(what + ": no reply within " + fmt(o_.timeout_s) + " s (--timeout)");
    return ok;
  }

  void open_stream(grpc::GenericStub& stub, const std::string& address) {
    auto st = std::make_unique<Stream>();
    bool latency = o_.benchmark == "p2p-latency";
    st->rw = stub.PrepareCall(&st->ctx, latency ? kEchoStream : kAckStream, &cq_);
    st->rw->StartCall(st.get());
    if (!next("opening a stream to parameter server " + address))
      throw Error("cannot open a stream to parameter server " + address);
    streams_.push_back(std::move(st));
  }

  // --rpc streaming: the payload as one message on each PS's stream, all in flight together.
  Sample stream_round(bool latency, Result* into, Clock::time_point t0,
                      const grpc::ByteBuffer& request) {
    for (auto& st : streams_) {
      st->rw->Write(request, st.get());
      st->rw->Read(&st->reply, st.get());
    }
    for (std::size_t done = 0; done < 2 * streams_.size(); ++done)
      if (!next("stream to parameter server(s) " + ps_list_))
        throw Error("a stream to parameter server(s) " + ps_list_ + " broke");
    Sample s;
    s.us = since_us(t0);  // the round trip, before the checksum is checked
    tfgrpcbench::Payload unused;
    for (std::size_t i = 0; i < streams_.size(); ++i)
      verify(streams_[i]->reply, latency, unused, o_.ps_addresses[i]);
    if (into) {
      into->calls += static_cast<long>(streams_.size());
      into->verified += static_cast<long>(streams_.size());
      into->bytes += static_cast<double>(expected_.length()) * streams_.size();
    }
    return s;
  }

  // One call to every parameter server (one PS for the p2p benchmarks), all in flight
  // together; verified against the payload's checksum. `into` is null during warm-up.
  Sample round(bool latency, Result* into) {
    auto t0 = Clock::now();
    Sample s;
    grpc::ByteBuffer request;
    if (serialized_) {
      tfgrpcbench::Payload msg;
      for (const auto& d : data_) msg.add_buffers(d);
      bool own = false;
      if (!grpc::SerializationTraits<tfgrpcbench::Payload>::Serialize(msg, &request, &own).ok())
        throw Error("cannot serialize the payload");
      s.ser_us += since_us(t0);
    } else {
      request = grpc::ByteBuffer(slices_.data(), slices_.size());
    }
    if (streaming_) return stream_round(latency, into, t0, request);
    std::vector<std::unique_ptr<Pending>> calls;
    for (std::size_t i = 0; i < stubs_.size(); ++i) {
      auto p = std::make_unique<Pending>();
      p->ctx.set_deadline(deadline());
      p->reader = stubs_[i]->PrepareUnaryCall(&p->ctx, latency ? kEcho : kAck, request, &cq_);
      p->reader->StartCall();
      p->reader->Finish(&p->reply, &p->status, reinterpret_cast<void*>(i));
      calls.push_back(std::move(p));
    }
    for (std::size_t done = 0; done < calls.size(); ++done) {
      void* tag;
      bool ok;
      if (!cq_.Next(&tag, &ok) || !ok) throw Error("completion queue failed");
    }
    tfgrpcbench::Payload echoed;
    if (latency && serialized_) {
      auto t1 = Clock::now();
      if (!grpc::SerializationTraits<tfgrpcbench::Payload>::Deserialize(&calls[0]->reply, &echoed).ok())
        throw Error("cannot parse the echoed payload");
      s.ser_us += since_us(t1);
    }
    s.us = since_us(t0);  // the round trip, before the checksum is checked
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const Pending& p = *calls[i];
      if (!p.status.ok())
        throw Error("call to parameter server " + o_.ps_addresses[i] + " failed: " +
                    p.status.error_message() + " (status " + std::to_string(p.status.error_code()) + ")");
      verify(p.reply, latency, echoed, o_.ps_addresses[i]);
      if (latency && serialized_) {
        auto it = p.ctx.GetServerTrailingMetadata().find(kSerNs);
        if (it == p.ctx.GetServerTrailingMetadata().end())
          throw Error("parameter server " + o_.ps_addresses[i] + " sent no serialization time");
        s.ser_us += std::stod(std::string(it->second.data(), it->second.size())) / 1000.0;
      }
    }
    if (into) {
      into->calls += static_cast<long>(calls.size());
      into->verified += static_cast<long>(calls.size());
      into->bytes += static_cast<double>(expected_.length()) * calls.size();
    }
    return s;
  }

  void verify(const grpc::ByteBuffer& reply, bool latency, const tfgrpcbench::Payload& echoed,
              const std::string& address) const {
    Checksum got;
    if (latency) {
      if (serialized_) {
        if (static_cast<std::size_t>(echoed.buffers_size()) != data_.size())
          throw Error("echo from " + address + " has " + std::to_string(echoed.buffers_size()) +
                      " buffers, sent " + std::to_string(data_.size()));
        add(got, echoed);
      } else {
        add(got, reply);
      }
    } else {
      grpc::Slice slice;
      uint64_t words[2];
      if (!reply.DumpToSingleSlice(&slice).ok() || slice.size() != sizeof words)
        throw Error("acknowledgement from " + address + " is not 16 bytes");
      std::memcpy(words, slice.begin(), sizeof words);
      if (words[0] != expected_.digest() || words[1] != expected_.length())
        throw Error("acknowledgement from " + address + ": checksum mismatch (" +
                    std::to_string(words[1]) + " bytes received, " +
                    std::to_string(expected_.length()) + " sent)");
      return;
    }
    if (got.digest() != expected_.digest() || got.length() != expected_.length())
      throw Error("echo from " + address + ": checksum mismatch (" + std::to_string(got.length()) +
                  " bytes back, " + std::to_string(expected_.length()) + " sent)");
  }

  const Options& o_;
  bool serialized_, streaming_, finished_ = false;
  std::string ps_list_;  // the PS addresses, for messages
  std::vector<Buffer> layout_;
  std::vector<std::string> data_;
  std::vector<grpc::Slice> slices_;
  Checksum expected_;
  grpc::CompletionQueue cq_;  // before the stubs and streams, which use it
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

// ---------------------------------------------------------------- child processes

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
  std::string what;
};

Child spawn(const char* self, const std::vector<std::string>& args, const std::string& what) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error("pipe: " + std::string(std::strerror(errno)));
  std::vector<char*> argv = {const_cast<char*>(self)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw Error("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the run
    if (getppid() != parent) _exit(1);
    dup2(fds[1], STDOUT_FILENO);
    execv(self, argv.data());
    std::fprintf(stderr, "error: cannot execute %s: %s\n", self, std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0], what};
}

// Reads one line from a child's stdout, failing after timeout_s or if it exits.
std::string read_line(Child& c, double timeout_s) {
  std::string line;
  auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(timeout_s));
  char ch;
  while (true) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    until - Clock::now()).count());
    if (left <= 0) throw Error(c.what + " did not start within " + std::to_string(timeout_s) + " s");
    pollfd p{c.out, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) continue;
    ssize_t n = read(c.out, &ch, 1);
    if (n <= 0) throw Error(c.what + " exited before it was ready (see its error above)");
    if (ch == '\n') return line;
    line += ch;
  }
}

std::string read_all(Child& c) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(c.out, buf, sizeof buf)) > 0) text.append(buf, n);
  close(c.out);
  c.out = -1;
  return text;
}

int wait_exit(Child& c) {
  int status = 0;
  if (waitpid(c.pid, &status, 0) < 0) return -1;
  c.pid = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

void stop(std::vector<Child>& children) {
  for (auto& c : children)
    if (c.pid > 0) kill(c.pid, SIGTERM);
  for (auto& c : children) {
    if (c.pid > 0) wait_exit(c);
    if (c.out >= 0) close(c.out);
  }
}

}  // namespace

int run_ps(const Options& o) {
  // SIGTERM/SIGINT are taken by sigwait below, in this thread only
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Services services;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(o.listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(&services.unary);
  builder.RegisterAsyncGenericService(&services.generic);
  apply_channel_args(o, [&](const std::string& n, const std::string& v) {
    int i;
    if (as_int(v, &i)) builder.AddChannelArgument(n, i); else builder.AddChannelArgument(n, v);
  });
  auto cq = builder.AddCompletionQueue();
  auto server = builder.BuildAndStart();
  if (!server || port == 0) throw Error("parameter server cannot listen on " + o.listen);
  std::string host = o.listen.substr(0, o.listen.rfind(':'));
  std::atomic<bool> stopping{false};
  std::thread poller(serve, cq.get(), &services, o.mode == "serialized", &stopping);
  std::printf("listening %s:%d\n", host.c_str(), port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  stopping = true;
  poller.join();
  return 0;
}

int run_worker(const Options& o) {
  Worker w(o);
  Result r = w.run();
  std::printf("%s\n", result_line(r).c_str());
  return 0;
}

int run_local(const Options& o, const char* self) {
  std::vector<Buffer> layout = make_payload(o.payload);
  std::vector<Child> servers;
  std::vector<std::string> ps = o.ps_addresses;
  try {
    for (long i = 0; ps.size() < static_cast<std::size_t>(o.parameter_servers); ++i) {
      int port = o.port == 0 ? 0 : o.port + static_cast<int>(i);
      std::string listen = o.host + ":" + std::to_string(port);
      std::vector<std::string> args = {"ps", "--listen", listen, "--mode", o.mode};
      for (const auto& [n, v] : o.channel_args) args.insert(args.end(), {"--channel-arg", n + "=" + v});
      servers.push_back(spawn(self, args,
                              "parameter server " + std::to_string(i) + " on " + listen));
      std::string line = read_line(servers.back(), o.timeout_s);
      if (line.rfind("listening ", 0) != 0) throw Error(servers.back().what + " said: " + line);
      ps.push_back(line.substr(10));
    }
    print_header(o, layout, ps);
    std::string joined;
    for (const auto& a : ps) joined += (joined.empty() ? "" : ",") + a;
    for (long rep = 1; rep <= o.repeats; ++rep) {
      std::vector<Child> workers;
      for (long w = 0; w < o.workers; ++w) {
        std::vector<std::string> args = {"worker"};
        for (const auto& a : o.forwarded) args.push_back(a);
        args.insert(args.end(), {"--ps", joined, "--worker-index", std::to_string(w)});
        workers.push_back(spawn(self, args, "worker " + std::to_string(w)));
      }
      std::vector<std::string> outputs;
      for (auto& c : workers) outputs.push_back(read_all(c));
      for (std::size_t w = 0; w < workers.size(); ++w) {
        int code = wait_exit(workers[w]);
        if (code != 0) {
          stop(workers);
          throw Error("worker " + std::to_string(w) + " failed (exit status " +
                      std::to_string(code) + ")");
        }
      }
      Result total;
      double mb_per_s = 0, calls_per_s = 0;
      for (std::size_t w = 0; w < workers.size(); ++w) {
        std::string line = outputs[w].substr(0, outputs[w].find('\n'));
        Result r = parse_result_line(line);
        print_row("worker", rep, std::to_string(w), r, r.bytes / 1e6 / r.seconds, r.calls / r.seconds);
        total.calls += r.calls;
        total.bytes += r.bytes;
        total.verified += r.verified;
        total.seconds = std::max(total.seconds, r.seconds);
        mb_per_s += r.bytes / 1e6 / r.seconds;  // workers run side by side: rates add up
        calls_per_s += r.calls / r.seconds;
        if (workers.size() == 1) {
          total.mean_us = r.mean_us;
          total.p50_us = r.p50_us;
          total.p99_us = r.p99_us;
          total.ser_us = r.ser_us;
        }
      }
      print_row("total", rep, "all", total, mb_per_s, calls_per_s);
    }
  } catch (...) {
    stop(servers);
    throw;
  }
  stop(servers);
  print_end();
  return 0;
}

}  // namespace tgb
