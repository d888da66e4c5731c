// normalize_image: stretches a grayscale PGM's contrast to the full 0..255 range. xreduce finds
// the darkest and the brightest pixel (one call each) where the pixels are: in host memory
// (omp), in CUDA device memory (cuda) or in an OpenCL buffer (opencl); a kernel of the same API
// then maps every pixel, and the result is written as an 8-bit PGM. The exercise is from
// Bederián and Wolovick, "Curso de CUDA, parte 3" (docs/references.md).
//
//   normalize_image [--backend omp|opencl|cuda] IN.pgm OUT.pgm
//
// Exit codes: 0 written, 2 usage, input or device error, 77 the backend cannot run here.
#include <cstdio>
#include <map>
#include <string>
#include <xreduce/xreduce.hpp>

#include "normalize.hpp"
#include "pgm.hpp"

Stretched stretch_on_host(const std::vector<float>& pixels) {
  const auto reducer = xr::make_reducer("omp");
  Stretched out;
  out.lo = reducer->reduce(pixels, xr::Op::Min).value.as<float>();
  out.hi = reducer->reduce(pixels, xr::Op::Max).value.as<float>();
  out.device = reducer->device();
  const auto lo = static_cast<std::uint32_t>(out.lo), range = static_cast<std::uint32_t>(out.hi) - lo;
  out.pixels.resize(pixels.size());
  const auto n = static_cast<std::int64_t>(pixels.size());
#pragma omp parallel for
  for (std::int64_t i = 0; i < n; ++i) out.pixels[i] = stretch(pixels[i], lo, range);
  return out;
}

#ifndef EXAMPLE_WITH_CUDA
Stretched stretch_on_cuda(const std::vector<float>&) {
  throw Unavailable("the installed xreduce has no CUDA backend");
}
#endif
#ifndef EXAMPLE_WITH_OPENCL
Stretched stretch_on_opencl(const std::vector<float>&) {
  throw Unavailable("the installed xreduce has no OpenCL backend");
}
#endif

int main(int argc, char** argv) {
  const std::map<std::string, Stretched (*)(const std::vector<float>&)> backends = {
      {"omp", stretch_on_host}, {"cuda", stretch_on_cuda}, {"opencl", stretch_on_opencl}};
  std::string backend = "omp";
  int first = 1;
  if (argc == 5 && std::string(argv[1]) == "--backend") {
    backend = argv[2];
    first = 3;
  }
  if (argc - first != 2 || !backends.count(backend)) {
    std::fprintf(stderr, "usage: normalize_image [--backend omp|opencl|cuda] IN.pgm OUT.pgm\n");
    return 2;
  }
  try {
    const Pgm image = read_pgm(argv[first]);
    const std::vector<float> pixels(image.pixels.begin(), image.pixels.end());  // f32: see normalize.hpp
    const Stretched out = backends.at(backend)(pixels);
    write_pgm(argv[first + 1], image.width, image.height, out.pixels);
    std::printf("%s on %s: %ux%u pixels of at most %u, min %g, max %g (one xreduce call each); "
                "stretched to 0..255 in %s\n",
                backend.c_str(), out.device.c_str(), image.width, image.height, image.maxval, out.lo, out.hi,
                argv[first + 1]);
    return 0;
  } catch (const Unavailable& e) {
    std::printf("normalize_image: skipped, --backend %s: %s\n", backend.c_str(), e.what());
    return 77;
  } catch (const xr::BackendUnavailable& e) {
    std::printf("normalize_image: skipped, --backend %s: %s\n", backend.c_str(), e.what());
    return 77;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normalize_image: %s\n", e.what());
    return 2;
  }
}
