// Shared declarations of the TF-gRPC-Bench suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tgb {

// Bad options and failed runs: the message is printed as "error: <message>".
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- payloads (paper Sec. 3.2)

enum class Category { Small = 0, Medium = 1, Large = 2 };

// Table 1: default size and [min, max] range of each iovec buffer category.
struct CategorySpec {
  const char* name;
  char letter;
  std::size_t default_bytes;
  std::size_t min_bytes;
  std::size_t max_bytes;  // inclusive
};
const CategorySpec& category_spec(Category c);
Category parse_category(const std::string& text);

struct PayloadOptions {
  std::string scheme = "uniform";            // uniform | random | skew | custom
  std::vector<Category> categories = {Category::Small, Category::Medium, Category::Large};
  std::size_t sizes[3] = {10, 10 * 1024, 1024 * 1024};  // bytes per category
  long buffers = 10;                         // iovec buffers in one payload
  Category skew_bias = Category::Large;
  std::vector<int> skew_mix = {60, 30, 10};  // percent, most-favoured category first
  std::vector<std::size_t> custom_sizes;     // custom: explicit buffer sizes
  long custom_counts[3] = {0, 0, 0};         // custom: buffers per category
  uint64_t seed = 1;
};

struct Buffer {
  Category category;
  std::size_t bytes;
};

// The buffers of one payload; throws Error naming the bad option.
std::vector<Buffer> make_payload(const PayloadOptions& o);
void validate_payload_options(const PayloadOptions& o);

// Buffer contents: seeded pseudo-random bytes.
std::vector<std::string> fill_buffers(const std::vector<Buffer>& layout, uint64_t seed);

// ---------------------------------------------------------------- checksum

// Fletcher-style sums over 64-bit little-endian words of a byte stream, in four
// independent lanes (so it runs near memory speed); position sensitive, and independent
// of how the stream is cut into pieces.
class Checksum {
 public:
  void update(const void* data, std::size_t len);
  uint64_t digest() const;  // includes the length
  uint64_t length() const { return length_; }

 private:
  static constexpr std::size_t kBlock = 32;  // four 8-byte words, one per lane
  static void block(const unsigned char* p, uint64_t* a, uint64_t* b);
  uint64_t a_[4] = {0x9e3779b97f4a7c15ULL, 1, 2, 3}, b_[4] = {0, 0, 0, 0};
  uint64_t length_ = 0;
  unsigned char carry_[kBlock];
  std::size_t carried_ = 0;
};

// ---------------------------------------------------------------- options (Table 2)

struct Options {
  std::string command = "run";  // run | ps | worker | payload | tcp-pingpong | tcp-stream
  std::string benchmark = "p2p-latency";
  std::string mode = "non-serialized";
  std::string rpc = "unary";  // unary (as TensorFlow's RecvTensor) | streaming
  std::string host = "127.0.0.1";  // where local parameter servers listen
  int port = 50001;                // first PS port (0: any free port)
  long parameter_servers = 1;
  long workers = 1;
  std::vector<std::string> ps_addresses;  // given: use running PSes instead of starting them
  double warmup_s = 2;
  double duration_s = 10;
  long repeats = 1;
  double timeout_s = 10;
  long worker_index = 0;
  PayloadOptions payload;
  std::string listen;  // ps: host:port to serve on
  // gRPC channel arguments (name=value) for both ends, after the suite's defaults
  std::vector<std::pair<std::string, std::string>> channel_args;
  std::vector<std::string> forwarded;  // the options as given, passed on to the workers
};

Options parse_options(int argc, char** argv);
std::string usage();

// ---------------------------------------------------------------- results and output

struct Result {
  long calls = 0;
  double bytes = 0;     // payload bytes sent by workers
  double seconds = 0;   // measured window
  double mean_us = 0, p50_us = 0, p99_us = 0;  // round-trip latency (latency benchmarks)
  double ser_us = 0;    // serialized mode: mean encode+decode time per call
  long verified = 0;    // calls whose echo or acknowledgement matched the checksum
};

// Header (format version and every parameter), then rows, then the end line.
void print_header(const Options& o, const std::vector<Buffer>& layout,
                  const std::vector<std::string>& ps);
void print_row(const char* kind, long repeat, const std::string& worker, const Result& r,
               double mb_per_s, double calls_per_s);
void print_end();
std::string result_line(const Result& r);      // worker -> run: one line
Result parse_result_line(const std::string& line);

// ---------------------------------------------------------------- programs

int run_ps(const Options& o);      // serve until SIGTERM/SIGINT
int run_worker(const Options& o);  // one worker's measurement, as a result line
int run_local(const Options& o, const char* self);  // start PSes and workers, print the output
int run_tcp(const Options& o);     // raw TCP ping-pong or stream on loopback

}  // namespace tgb
