// The SIMD folds of the OpenMP segmented reductions (segment_folds.hpp), in packs of kPackBytes: a
// pack is one SIMD register of accumulators, a GCC/Clang vector type. segment_folds.hpp includes this
// file twice, inside namespaces that set kPackBytes: `portable` (16 bytes, the portable build)
// and `avx2` (32 bytes, under `#pragma GCC target("avx2,f16c")`), so that every function here,
// down to the loads, is compiled for the instruction set of its copy. No include guard, for that
// reason. Both copies put every element into the same lane and fold the lanes in the same order
// (fold_pack), so they compute the same thing, bit for bit.
//
// Before the include: kPackBytes, start_of, share_start, empty_of and Part (segment_folds.hpp).

// A pack of A, its lanes, and the integer vector that a comparison of two packs gives (the
// condition of a select). OpFn's apply holds for packs lane by lane (a + b, a * b, the selects of
// min and max): see apply below.
template <class A> struct PackOf {
  typedef A type __attribute__((vector_size(kPackBytes)));
};
template <class A> using Pack = typename PackOf<A>::type;
template <class A> constexpr std::uint64_t kPackLanes = kPackBytes / sizeof(A);
template <class A> struct MaskOf {
  using Lane = std::conditional_t<
      sizeof(A) == 1, std::int8_t,
      std::conditional_t<sizeof(A) == 2, std::int16_t, std::conditional_t<sizeof(A) == 4, std::int32_t, std::int64_t>>>;
  typedef Lane type __attribute__((vector_size(kPackBytes)));
};

// OpFn<O>::apply lane by lane on packs; integer sums and products in the unsigned type, as
// wrapping() does for single values, so that they wrap with no undefined behaviour.
template <Op O, class A> Pack<A> apply(Pack<A> a, Pack<A> b) {
  if constexpr (std::is_integral_v<A> && (O == Op::Sum || O == Op::Prod)) {
    using U = typename PackOf<std::make_unsigned_t<A>>::type;
    return std::bit_cast<Pack<A>>(OpFn<O>::apply(std::bit_cast<U>(a), std::bit_cast<U>(b)));
  } else {
    return OpFn<O>::apply(a, b);
  }
}

template <class A> Pack<A> splat(A v) {
  Pack<A> p;
  for (std::uint64_t e = 0; e < kPackLanes<A>; ++e) p[e] = v;
  return p;
}

// The packs of A that one load of T at x (any alignment) makes, converted as one vector: a
// pack's bytes of T, sizeof(A) / sizeof(T) packs (an i32 pack widens to two i64 packs, a u8 pack
// to eight u64 packs, an f16 pack to two f32 packs), or fewer where a block holds fewer (Packs:
// how many). f16 and bf16 widen element by element through their exact conversions (bf16 a
// shift, f16 branch-free), which the compiler turns into vector code.
template <class A, class T> constexpr std::uint64_t kPacksPerLoad = sizeof(A) / sizeof(T);
template <class A, class T, std::uint64_t Packs = kPacksPerLoad<A, T>> std::array<Pack<A>, Packs> load(const T* x) {
  constexpr std::uint64_t elements = Packs * kPackLanes<A>;
  if constexpr (is_half_v<T>) {
    static_assert(std::is_same_v<A, float>, "f16 and bf16 compute in f32");
    T raw[elements];
    std::memcpy(raw, x, sizeof raw);
    std::array<A, elements> wide;
    for (std::uint64_t e = 0; e < elements; ++e) wide[e] = static_cast<A>(raw[e]);
    return std::bit_cast<std::array<Pack<A>, Packs>>(wide);
  } else {
    typedef T Raw __attribute__((vector_size(elements * sizeof(T))));
    typedef A Wide __attribute__((vector_size(elements * sizeof(A))));
    Raw r;
    std::memcpy(&r, x, sizeof r);
    return std::bit_cast<std::array<Pack<A>, Packs>>(__builtin_convertvector(r, Wide));
  }
}

// The M packs of elements at x into the M packs of lanes.
template <Op O, class A, std::uint64_t M, class T> [[gnu::always_inline]] inline void add_block(Pack<A>* lane, const T* x) {
  constexpr std::uint64_t P = kPackLanes<A>, G = std::min(M, kPacksPerLoad<A, T>);
  static_assert(M % G == 0);
  for (std::uint64_t m = 0; m < M; m += G) {
    const auto v = load<A, T, G>(x + m * P);
    for (std::uint64_t k = 0; k < G; ++k) lane[m + k] = apply<O, A>(lane[m + k], v[k]);
  }
}

// add_block of a last block of which only the first `count` (< M * P) elements count, the others
// taken as the identity: a compare and a select a pack, no branch on the count.
template <Op O, class A, std::uint64_t M, class T>
[[gnu::always_inline]] inline void add_partial_block(Pack<A>* lane, const T* x, std::uint64_t count) {
  constexpr std::uint64_t P = kPackLanes<A>, G = std::min(M, kPacksPerLoad<A, T>);
  using Mask = typename MaskOf<A>::type;
  using L = std::remove_reference_t<decltype(Mask{}[0])>;
  static_assert(M * P - 1 <= static_cast<std::uint64_t>(std::numeric_limits<L>::max()), "lane indices fit a mask lane");
  const Mask left = Mask{} + static_cast<L>(count);
  for (std::uint64_t m = 0; m < M; m += G) {
    const auto v = load<A, T, G>(x + m * P);
    for (std::uint64_t k = 0; k < G; ++k) {
      Mask index;
      for (std::uint64_t e = 0; e < P; ++e) index[e] = static_cast<L>((m + k) * P + e);
      lane[m + k] = apply<O, A>(lane[m + k], index < left ? v[k] : splat<A>(start_of<O, A>()));
    }
  }
}

// op over x[0, n) in W lanes (M = W / P packs): lane j takes elements j, j + W, j + 2W, ... in
// order; then the packs fold pairwise (pack m takes pack m + M / 2, then M / 4, ...) to one pack,
// which fold_lanes finishes: lane j meets lane j + W / 2, then j + W / 4, ..., whatever the pack
// width. At most ceil(n / W) + log2(W) roundings (the identity's are exact). The lanes start from
// the identity; the last block, partial or empty, loads whole with its lanes past n set to the
// identity when `block_readable` (last_block_readable), through a padded copy otherwise: the same
// operations in the same order either way, and no branch on how many elements it holds. Each
// block asks for the line kLanePrefetchBytes ahead (policy.hpp), which runs on into the segments
// that follow.
template <Op O, class T, class A, std::uint64_t W>
[[gnu::always_inline]] inline Pack<A> fold_pack(const T* x, std::uint64_t n, bool block_readable) {
  constexpr std::uint64_t P = kPackLanes<A>, M = W / P;
  constexpr A id = start_of<O, A>();
  Pack<A> lane[M];
  for (auto& a : lane) a = splat<A>(id);
  std::uint64_t i = 0;
  for (; i + W <= n; i += W) {
    prefetch_ahead<W * sizeof(T)>(x + i);
    add_block<O, A, M>(lane, x + i);
  }
  const std::uint64_t rest = n - i;
  prefetch_ahead<W * sizeof(T)>(x + i);
  if (block_readable) {
    add_partial_block<O, A, M>(lane, x + i, rest);
  } else if (rest != 0) {
    A padded[W];
    for (std::uint64_t j = 0; j < W; ++j) padded[j] = j < rest ? static_cast<A>(x[i + j]) : id;
    add_block<O, A, M>(lane, padded);
  }
  for (std::uint64_t h = M / 2; h > 0; h /= 2)
    for (std::uint64_t m = 0; m < h; ++m) lane[m] = apply<O, A>(lane[m], lane[m + h]);
  return lane[0];
}

// The lanes of one pack folded pairwise: lane e takes lane e + P / 2, then P / 4, ...
template <Op O, class A> A fold_lanes(Pack<A> p) {
  constexpr std::uint64_t P = kPackLanes<A>;
  A last[P];
  for (std::uint64_t e = 0; e < P; ++e) last[e] = p[e];
  for (std::uint64_t h = P / 2; h > 0; h /= 2)
    for (std::uint64_t e = 0; e < h; ++e) last[e] = OpFn<O>::apply(last[e], last[e + h]);
  return last[0];
}

template <Op O, class T, class A, std::uint64_t W> [[gnu::always_inline]] inline A fold(const T* x, std::uint64_t n, bool block_readable) {
  return fold_lanes<O, A>(fold_pack<O, T, A, W>(x, n, block_readable));
}

// Whether fold_pack may read a whole last block: x[floor(n / W) * W, that + W) lies inside the
// input, which holds `readable` elements from x's position `place` on.
template <std::uint64_t W> bool last_block_readable(std::uint64_t place, std::uint64_t n, std::uint64_t readable) {
  return place + n / W * W + W <= readable;
}

// A fold of x[place, place + n) in W lanes, reading a whole last block where the input allows.
template <Op O, class T, class A, std::uint64_t W>
[[gnu::always_inline]] inline A fold_at(const T* x, std::uint64_t readable, std::uint64_t place, std::uint64_t n) {
  return fold<O, T, A, W>(x + place, n, last_block_readable<W>(place, n, readable));
}

// Thread t of nt's part of a segmented reduction (run_segments): it folds, in W lanes, the
// segments of s that start in its share of the positions (the last thread also the empty ones at
// the end); one that runs past the share's end leaves its first piece in out, and the piece of
// the segment that runs into the share from before goes to `part`. `readable`: elements of x
// that may be read.
template <Op O, class T, class A, std::uint64_t W, class S>
void fold_share(const T* x, std::uint64_t readable, const S& s, A* out, Part<A>& part, std::uint64_t t, std::uint64_t nt) {
  const std::uint64_t total = s.start(s.count);
  const A empty = empty_of<A>(O);
  const std::uint64_t lo = share_start(total, t, nt), hi = share_start(total, t + 1, nt);
  const std::uint64_t first = s.first_from(lo), end = t + 1 == nt ? s.count : s.first_from(hi);
  if (first > 0 && lo < hi) {  // the segment before `first` starts before lo: does it reach into the share?
    const std::uint64_t p = first - 1, finish = s.finish(p);
    if (finish > lo) part = {p, fold_at<O, T, A, W>(x, readable, s.place(p) + (lo - s.start(p)), std::min(finish, hi) - lo)};
  }
  // The segments that end in the share, then the one that runs past it.
  const std::uint64_t whole = end > first && s.finish(end - 1) > hi ? end - 1 : end;
  for (std::uint64_t i = first; i < whole; ++i) {
    const std::uint64_t n = s.finish(i) - s.start(i);
    const A value = fold_at<O, T, A, W>(x, readable, s.place(i), n);
    out[i] = n == 0 ? empty : value;
  }
  if (whole < end) out[whole] = fold_at<O, T, A, W>(x, readable, s.place(whole), hi - s.start(whole));
}
