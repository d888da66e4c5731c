// OpenMP parallel regions that no exception leaves. An exception that leaves a parallel region,
// or the body of a worksharing loop, ends the process (std::terminate); every region of the
// library therefore runs its threads' work through a RegionErrors, which keeps the first
// exception any thread throws and rethrows it on the calling thread after the region:
//
//   RegionErrors errors;
//   #pragma omp parallel
//   errors.run(Region::OmpVector, [&] { ...this thread's share... });
//   errors.rethrow();
//
// A region whose threads meet a worksharing loop or a barrier calls enter() first, then wraps
// what may throw in guard() (each loop iteration, each phase between barriers) so that every
// thread still meets every construct; iterations may skip their work once failed() says that a
// thread has failed. Each region is named in testing.hpp's table, and enter() gives the tests a
// fault to inject there (testing::arm_region).
#pragma once

#include <atomic>
#include <exception>
#include <utility>

#include "testing.hpp"

namespace xr::detail {

using testing::Region;

class RegionErrors {
 public:
  // Called by every thread of `region` as it starts: the region's test hook, which throws only
  // when a test armed it.
  void enter(Region region) noexcept { guard([&] { testing::enter_region(region); }); }

  // enter(region), then this thread's work unless that failed.
  template <class Work> void run(Region region, Work&& work) noexcept {
    enter(region);
    if (!failed()) guard(std::forward<Work>(work));
  }

  // Runs work, keeping its exception if it throws.
  template <class Work> void guard(Work&& work) noexcept {
    try {
      std::forward<Work>(work)();
    } catch (...) {
      keep();
    }
  }

  // Whether any thread's work has thrown (threads may stop early when it has).
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }

  // After the region, on the calling thread: rethrows the first exception kept, if any.
  void rethrow() const {
    if (failed_.load(std::memory_order_acquire)) std::rethrow_exception(first_);
  }

 private:
  void keep() noexcept {
    if (!failed_.exchange(true, std::memory_order_acq_rel)) first_ = std::current_exception();
  }

  std::atomic<bool> failed_{false};
  std::exception_ptr first_;  // written by the first thread that fails, read after the region
};

}  // namespace xr::detail
