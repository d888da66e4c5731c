// An application that uses the installed xreduce: sums 1..1000 on every usable backend.
#include <cstdio>
#include <numeric>
#include <vector>
#include <xreduce/xreduce.hpp>

int main() {
  std::vector<std::int64_t> data(1000);
  std::iota(data.begin(), data.end(), 1);
  int failures = 0;
  for (const auto& name : xr::available_backends()) {
    const xr::Result r = xr::make_reducer(name)->reduce(data, xr::Op::Sum);
    std::printf("%s: %s\n", name.c_str(), r.value.to_string().c_str());
    failures += r.value.i != 500500;
  }
  return failures;
}
