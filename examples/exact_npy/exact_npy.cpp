// exact_npy: the exact sum of a .npy file on every backend that can run here, and on the host
// (xreduce's reference: a superaccumulator, rounded once). A float sum
// normally depends on the order of its additions, so CUDA, OpenCL and OpenMP round it
// differently; with RunOptions::exact each returns the exact sum rounded once, and so the same
// bits. The file is streamed from disk in chunks (xr::FileSource): any size fits.
//
//   exact_npy FILE.npy      prints each backend's sum and its bits in hex, then "identical";
//                           exit 0 when all are identical, 1 when they differ, 2 on an error
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>
#include <xreduce/reference.hpp>
#include <xreduce/xreduce.hpp>

namespace {

// The bits of a result in hex: 8 digits for f32, 16 for f64 and the integers.
std::string hex_bits(const xr::Scalar& value) {
  char text[24];
  if (value.type == xr::DType::F32) {
    const float f = static_cast<float>(value.f);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    std::snprintf(text, sizeof text, "0x%08x", bits);
  } else {
    std::uint64_t bits = 0;
    if (xr::is_float(value.type)) std::memcpy(&bits, &value.f, sizeof bits);
    else bits = static_cast<std::uint64_t>(value.i);
    std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(bits));
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: exact_npy FILE.npy\n");
    return 2;
  }
  try {
    xr::FileSource file(argv[1], std::nullopt, xr::FileFormat::Npy);
    xr::RunOptions options;
    options.exact = xr::exact_applies(xr::Op::Sum, file.type());  // integer sums are exact anyway
    std::printf("sum of %llu %s from %s%s\n", static_cast<unsigned long long>(file.size()),
                std::string(xr::to_string(file.type())).c_str(), argv[1], options.exact ? ", exact" : "");
    std::vector<xr::Scalar> sums;
    for (const std::string& backend : xr::available_backends()) {
      const auto reducer = xr::make_reducer(backend);
      const xr::Result r = reducer->reduce(file, xr::Op::Sum, options);
      std::printf("  %-7s %s  %-24s (%s on %s)\n", backend.c_str(), hex_bits(r.value).c_str(),
                  r.value.to_string().c_str(), r.kernel.c_str(), r.device.c_str());
      sums.push_back(r.value);
    }
    const xr::Reference host = xr::reference_reduce(file, xr::Op::Sum);
    std::printf("  %-7s %s  %-24s (xr::reference_reduce)\n", "host", hex_bits(host.value).c_str(),
                host.value.to_string().c_str());
    sums.push_back(host.value);
    for (const xr::Scalar& s : sums)
      if (!s.same_bits(sums.front())) {
        std::printf("DIFFERENT\n");
        return 1;
      }
    std::printf("identical\n");
    return 0;
  } catch (const xr::Error& e) {
    std::fprintf(stderr, "exact_npy: %s\n", e.what());
    return 2;
  }
}
