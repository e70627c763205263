// Payload generation (paper Sec. 3.2, Table 1) and the checksum that verifies echoes.
#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>

#include "bench.h"

namespace tgb {

namespace {
const CategorySpec kCategories[3] = {
    {"small", 'S', 10, 1, 1024 - 1},
    {"medium", 'M', 10 * 1024, 1024, 1024 * 1024 - 1},
    {"large", 'L', 1024 * 1024, 1024 * 1024, 10 * 1024 * 1024},
};

std::string range_text(const CategorySpec& c) {
  std::ostringstream s;
  s << "[" << c.min_bytes << ", " << c.max_bytes << "] bytes";
  return s.str();
}
}  // namespace

const CategorySpec& category_spec(Category c) { return kCategories[static_cast<int>(c)]; }

Category parse_category(const std::string& text) {
  for (int i = 0; i < 3; ++i) {
    if (text == kCategories[i].name || (text.size() == 1 && text[0] == kCategories[i].letter))
      return static_cast<Category>(i);
  }
  throw Error("unknown buffer category '" + text + "' (expected small, medium or large)");
}

void validate_payload_options(const PayloadOptions& o) {
  const std::string schemes[] = {"uniform", "random", "skew", "custom"};
  if (std::find(std::begin(schemes), std::end(schemes), o.scheme) == std::end(schemes))
    throw Error("unknown payload scheme '" + o.scheme +
                "' (expected uniform, random, skew or custom)");
  for (int i = 0; i < 3; ++i) {
    const CategorySpec& c = kCategories[i];
    if (o.sizes[i] < c.min_bytes || o.sizes[i] > c.max_bytes)
      throw Error("--" + std::string(c.name) + "-bytes " + std::to_string(o.sizes[i]) +
                  ": outside the " + c.name + " category's range " + range_text(c) +
                  " (Table 1)");
  }
  if (o.scheme == "custom") {
    long counted = o.custom_counts[0] + o.custom_counts[1] + o.custom_counts[2];
    if (o.custom_sizes.empty() && counted == 0)
      throw Error("scheme custom needs --sizes or --counts with at least one buffer");
    if (!o.custom_sizes.empty() && counted != 0)
      throw Error("scheme custom takes --sizes or --counts, not both");
    for (std::size_t s : o.custom_sizes) {
      if (s < kCategories[0].min_bytes || s > kCategories[2].max_bytes)
        throw Error("--sizes " + std::to_string(s) + ": outside every category's range " +
                    "(Small from 1 B to Large up to 10485760 B, Table 1)");
    }
    return;
  }
  if (o.buffers <= 0)
    throw Error("--buffers " + std::to_string(o.buffers) +
                ": a payload needs at least one iovec buffer");
  if (o.categories.empty()) throw Error("--categories: no buffer category chosen");
  for (std::size_t i = 0; i < o.categories.size(); ++i)
    for (std::size_t j = i + 1; j < o.categories.size(); ++j)
      if (o.categories[i] == o.categories[j])
        throw Error(std::string("--categories: ") + category_spec(o.categories[i]).name +
                    " given twice");
  if ((o.scheme == "random" || o.scheme == "skew") && o.categories.size() < 2)
    throw Error("scheme " + o.scheme + " needs at least two buffer categories (--categories)");
  if (o.scheme == "skew") {
    if (std::find(o.categories.begin(), o.categories.end(), o.skew_bias) == o.categories.end())
      throw Error(std::string("--skew-bias ") + category_spec(o.skew_bias).name +
                  ": not among the chosen --categories");
    if (o.skew_mix.size() != 3)
      throw Error("--skew-mix needs three percentages (most favoured first), e.g. 60,30,10");
    int total = 0;
    for (std::size_t i = 0; i < o.skew_mix.size(); ++i) {
      if (o.skew_mix[i] <= 0) throw Error("--skew-mix: every share must be positive");
      if (i > 0 && o.skew_mix[i] > o.skew_mix[i - 1])
        throw Error("--skew-mix: shares must not increase (most favoured category first)");
      total += o.skew_mix[i];
    }
    if (total != 100) throw Error("--skew-mix: shares add up to " + std::to_string(total) +
                                  ", not 100");
  }
}

namespace {
// Skew order: the biased category first, then the others from the largest down
// (bias large: L M S; bias medium: M L S; bias small: S M L keeps Medium before Large).
std::vector<Category> skew_order(const PayloadOptions& o) {
  std::vector<Category> order = {o.skew_bias};
  std::vector<Category> rest;
  for (Category c : o.categories)
    if (c != o.skew_bias) rest.push_back(c);
  if (o.skew_bias == Category::Small)
    std::sort(rest.begin(), rest.end());
  else
    std::sort(rest.rbegin(), rest.rend());
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

// Counts per share by the largest remainder, so 10 buffers at 60/30/10 are exactly 6/3/1.
std::vector<long> apportion(long n, const std::vector<int>& shares) {
  long total = 0;
  for (int s : shares) total += s;
  std::vector<long> counts(shares.size());
  std::vector<std::pair<long, std::size_t>> remainders;
  long given = 0;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    counts[i] = n * shares[i] / total;
    given += counts[i];
    remainders.push_back({-(n * shares[i] % total), i});  // larger remainder first, then order
  }
  std::sort(remainders.begin(), remainders.end());
  for (std::size_t k = 0; given < n; ++k, ++given) counts[remainders[k].second]++;
  return counts;
}
}  // namespace

std::vector<Buffer> make_payload(const PayloadOptions& o) {
  validate_payload_options(o);
  auto of = [&](Category c) { return Buffer{c, o.sizes[static_cast<int>(c)]}; };
  std::vector<Buffer> out;
  if (o.scheme == "custom") {
    for (std::size_t s : o.custom_sizes) {
      Category c = s >= kCategories[2].min_bytes   ? Category::Large
                   : s >= kCategories[1].min_bytes ? Category::Medium
                                                    : Category::Small;
      out.push_back({c, s});
    }
    for (int i = 0; i < 3; ++i)
      for (long k = 0; k < o.custom_counts[i]; ++k) out.push_back(of(static_cast<Category>(i)));
    return out;
  }
  if (o.scheme == "uniform") {
    // the chosen categories in turn, in the order given: counts differ by at most one
    for (long k = 0; k < o.buffers; ++k) out.push_back(of(o.categories[k % o.categories.size()]));
  } else if (o.scheme == "random") {
    std::mt19937_64 rng(o.seed);
    for (long k = 0; k < o.buffers; ++k)
      out.push_back(of(o.categories[rng() % o.categories.size()]));
  } else {  // skew
    std::vector<Category> order = skew_order(o);
    std::vector<int> shares(o.skew_mix.begin(), o.skew_mix.begin() + order.size());
    std::vector<long> counts = apportion(o.buffers, shares);
    for (std::size_t i = 0; i < order.size(); ++i)
      for (long k = 0; k < counts[i]; ++k) out.push_back(of(order[i]));
  }
  return out;
}

std::vector<std::string> fill_buffers(const std::vector<Buffer>& layout, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5bd1e995ULL);
  std::vector<std::string> out;
  out.reserve(layout.size());
  for (const Buffer& b : layout) {
    std::string data(b.bytes, '\0');
    for (std::size_t i = 0; i < b.bytes; i += 8) {
      uint64_t v = rng();
      std::memcpy(&data[i], &v, std::min<std::size_t>(8, b.bytes - i));
    }
    out.push_back(std::move(data));
  }
  return out;
}

// ---------------------------------------------------------------- checksum

void Checksum::block(const unsigned char* p, uint64_t* a, uint64_t* b) {
  for (int lane = 0; lane < 4; ++lane) {
    uint64_t w;
    std::memcpy(&w, p + 8 * lane, 8);
    a[lane] += w;
    b[lane] += a[lane];
  }
}

void Checksum::update(const void* data, std::size_t len) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  length_ += len;
  if (carried_) {  // finish the block a previous piece started
    std::size_t take = std::min(len, kBlock - carried_);
    std::memcpy(carry_ + carried_, p, take);
    carried_ += take;
    p += take;
    len -= take;
    if (carried_ < kBlock) return;
    block(carry_, a_, b_);
    carried_ = 0;
  }
  // The sums in locals: as members they would go back to memory after every block, since
  // the compiler must assume the bytes read may alias them; in registers the loop runs
  // about twice as fast (the PS's checksum delays each Large payload's acknowledgement).
  uint64_t a[4], b[4];
  std::memcpy(a, a_, sizeof a);
  std::memcpy(b, b_, sizeof b);
  for (; len >= kBlock; p += kBlock, len -= kBlock) block(p, a, b);
  std::memcpy(a_, a, sizeof a);
  std::memcpy(b_, b, sizeof b);
  std::memcpy(carry_, p, len);
  carried_ = len;
}

uint64_t Checksum::digest() const {
  Checksum last = *this;
  if (last.carried_) {  // the partial block, zero-padded
    std::memset(last.carry_ + last.carried_, 0, kBlock - last.carried_);
    last.block(last.carry_, last.a_, last.b_);
  }
  uint64_t h = length_ * 0xff51afd7ed558ccdULL;
  for (int lane = 0; lane < 4; ++lane)
    h = (h ^ last.a_[lane]) * 0x100000001b3ULL ^ last.b_[lane] * 0xc4ceb9fe1a85ec53ULL;
  return h;
}

}  // namespace tgb
