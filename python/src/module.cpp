// xreduce._xreduce: the nanobind extension under the Python package. It maps arrays (DLPack,
// the buffer protocol) to pointers, strides and a DType, and forwards each call to the public
// C++ API with the GIL released; NumPy's conventions live in the Python layer (xreduce/_api.py).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "xreduce/xreduce.hpp"
#ifdef XR_PYTHON_CUDA
#include "xreduce/cuda.hpp"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// An array seen through DLPack or the buffer protocol. The ndarray keeps the producer's memory
// alive for as long as the View lives.
struct View {
  nb::ndarray<nb::ro> array;
  xr::DType type = xr::DType::F32;

  std::uintptr_t data() const { return reinterpret_cast<std::uintptr_t>(array.data()); }
  std::vector<std::int64_t> shape() const {
    std::vector<std::int64_t> s(array.ndim());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::int64_t>(array.shape(i));
    return s;
  }
  std::vector<std::int64_t> strides() const {  // in elements
    std::vector<std::int64_t> s(array.ndim());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = array.stride(i);
    return s;
  }
};

// The DType of a DLPack (code, bits) pair; TypeError for anything xreduce does not reduce.
xr::DType dtype_of(const nb::dlpack::dtype& d) {
  using code = nb::dlpack::dtype_code;
  if (d.lanes == 1) {
    switch (static_cast<code>(d.code)) {
      case code::Int:
        if (d.bits == 8) return xr::DType::I8;
        if (d.bits == 32) return xr::DType::I32;
        if (d.bits == 64) return xr::DType::I64;
        break;
      case code::UInt:
        if (d.bits == 8) return xr::DType::U8;
        if (d.bits == 32) return xr::DType::U32;
        if (d.bits == 64) return xr::DType::U64;
        break;
      case code::Float:
        if (d.bits == 16) return xr::DType::F16;
        if (d.bits == 32) return xr::DType::F32;
        if (d.bits == 64) return xr::DType::F64;
        break;
      case code::Bfloat:
        if (d.bits == 16) return xr::DType::BF16;
        break;
      default: break;
    }
  }
  std::string names;
  for (const auto& t : xr::type_table) names += (names.empty() ? "" : ", ") + std::string(t.name);
  throw nb::type_error(("xreduce reduces " + names + "; not DLPack type code " + std::to_string(d.code) + " of " +
                        std::to_string(d.bits) + " bits" + (d.lanes == 1 ? "" : " x" + std::to_string(d.lanes)))
                           .c_str());
}

// `dtype` names the element type when the array's own type cannot say it (a NumPy bfloat16
// array passes its bits as uint16); it must have the same size.
View make_view(nb::handle obj, std::optional<std::string> dtype) {
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(obj, array))
    throw nb::type_error((std::string("xreduce takes arrays with __dlpack__, __cuda_array_interface__ or the buffer "
                                      "protocol, not ") + nb::type_name(obj.type()).c_str())
                             .c_str());
  View v{array, xr::DType::F32};
  if (dtype) {
    v.type = xr::parse_dtype(*dtype);
    if (xr::size_of(v.type) * 8 != array.dtype().bits || array.dtype().lanes != 1)
      throw nb::type_error(("dtype " + *dtype + " does not match the array's " + std::to_string(array.dtype().bits) +
                            "-bit elements").c_str());
  } else {
    v.type = dtype_of(array.dtype());
  }
  return v;
}

xr::Op op_of(const std::string& name) { return xr::parse_op(name); }
xr::DType type_of(const std::string& name) { return xr::parse_dtype(name); }

xr::RunOptions run_options(bool exact, const std::string& kernel, unsigned threads, const std::string& accumulator) {
  xr::RunOptions o;
  o.exact = exact;
  o.kernel = kernel;
  o.threads = threads;
  if (accumulator == "native") o.accumulator = xr::Accumulator::Native;
  else if (accumulator != "wide")
    throw xr::InvalidArgument("accumulator must be 'wide' or 'native', not '" + xr::printable(accumulator) + "'");
  return o;
}

xr::MatrixShape matrix_shape(std::uint64_t rows, std::uint64_t cols, std::uint64_t stride, const std::string& order) {
  if (order != "C" && order != "F") throw xr::InvalidArgument("order must be 'C' or 'F', not '" + xr::printable(order) + "'");
  return {rows, cols, stride, order == "C" ? xr::Order::C : xr::Order::Fortran};
}

// A Scalar as a Python int or float (a u64 as its unsigned value).
nb::object scalar(const xr::Scalar& s) {
  if (xr::is_float(s.type)) return nb::float_(s.f);
  if (s.type == xr::DType::U64) return nb::int_(static_cast<std::uint64_t>(s.i));
  return nb::int_(s.i);
}

// A HostBuffer as a 1-D uint8 NumPy array over its bytes (no copy), or None where it is empty.
nb::object host_bytes(xr::HostBuffer&& buffer, bool none_if_empty) {
  if (none_if_empty && buffer.size() == 0) return nb::none();
  auto* owned = new xr::HostBuffer(std::move(buffer));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<xr::HostBuffer*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(owned->data(), {owned->bytes()}, owner));
}

// A segmented reduction for the Python layer: (values, the name of their DType, the record,
// indices or None, maxima or None). The arrays are bytes; the Python layer views them as their
// types (indices: i64; maxima: the values' type).
nb::tuple segmented(xr::SegmentedResult&& r) {
  const std::string type(xr::to_string(r.values.type()));
  nb::object values = host_bytes(std::move(r.values), false);
  nb::object indices = host_bytes(std::move(r.indices), true);
  nb::object maxima = host_bytes(std::move(r.maxima), true);
  return nb::make_tuple(values, type, std::move(r.record), indices, maxima);
}

nb::dict status_dict(const xr::BackendStatus& s) {
  nb::list devices;
  for (const auto& d : s.devices) {
    nb::dict dev;
    dev["name"] = d.name;
    dev["detail"] = d.detail;
    dev["platform"] = d.select.platform;
    dev["device"] = d.select.device;
    dev["gpu"] = d.gpu;
    dev["max_input_bytes"] = d.max_input_bytes;
    devices.append(dev);
  }
  nb::dict out;
  out["backend"] = s.name;
  out["compiled"] = s.compiled;
  out["usable"] = s.usable;
  out["reason"] = s.reason;
  out["devices"] = devices;
  return out;
}

nb::dict kernel_dict(const xr::KernelInfo& k) {
  static const char* kinds[] = {"rung", "auto", "baseline", "probe"};
  nb::list ops, types, layouts;
  for (auto o : k.ops) ops.append(std::string(xr::to_string(o)));
  for (auto t : k.types) types.append(std::string(xr::to_string(t)));
  for (auto l : k.layouts) layouts.append(std::string(xr::to_string(l)));
  nb::dict out;
  out["name"] = k.name;
  out["note"] = k.note;
  out["kind"] = kinds[static_cast<int>(k.kind)];
  out["ops"] = ops;
  out["types"] = types;
  out["exact"] = k.exact;
  out["blocks"] = k.blocks.describe();
  if (!k.layouts.empty()) out["layouts"] = layouts;
  return out;
}

#ifdef XR_PYTHON_CUDA
// Calls f(static_cast<const T*>(ptr)) with T the C++ type of `type`.
template <class F> decltype(auto) with_device_pointer(std::uintptr_t ptr, xr::DType type, F&& f) {
  return xr::visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    return f(reinterpret_cast<const T*>(ptr));
  });
}
cudaStream_t stream_of(std::uintptr_t stream) { return reinterpret_cast<cudaStream_t>(stream); }
#endif

}  // namespace

NB_MODULE(_xreduce, m) {
  m.doc() = "xreduce's C++ library, as the xreduce package calls it";

  // Exceptions: xreduce's own classes for what is neither a bad argument nor a bad type.
  static nb::object backend_unavailable =
      nb::exception<xr::BackendUnavailable>(m, "BackendUnavailable", PyExc_RuntimeError);
  static nb::object device_error = nb::exception<xr::DeviceError>(m, "DeviceError", PyExc_RuntimeError);
  static nb::object kernel_build_error = nb::exception<xr::KernelBuildError>(m, "KernelBuildError", device_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const xr::BackendUnavailable& e) {
      PyErr_SetString(backend_unavailable.ptr(), e.what());
    } catch (const xr::KernelBuildError& e) {
      PyErr_SetString(kernel_build_error.ptr(), (std::string(e.what()) + "\n" + e.log()).c_str());
    } catch (const xr::DeviceError& e) {
      PyErr_SetString(device_error.ptr(), e.what());
    } catch (const xr::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const xr::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const xr::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.attr("has_cuda") =
#ifdef XR_PYTHON_CUDA
      true;
#else
      false;
#endif

  nb::class_<View>(m, "View")
      .def_prop_ro("data", &View::data)
      .def_prop_ro("shape", &View::shape)
      .def_prop_ro("strides", &View::strides)
      .def_prop_ro("dtype", [](const View& v) { return std::string(xr::to_string(v.type)); })
      .def_prop_ro("device_type", [](const View& v) { return v.array.device_type(); })
      .def_prop_ro("device_id", [](const View& v) { return v.array.device_id(); });
  m.def("view", &make_view, "obj"_a, "dtype"_a = nb::none(),
        "The pointer, shape, strides (in elements), type and device of an array or DLPack capsule, read in place.");

  nb::class_<xr::Result>(m, "Result", "What one reduction returns: the value and how it was obtained.")
      .def_prop_ro("value", [](const xr::Result& r) { return scalar(r.value); })
      .def_ro("index", &xr::Result::index)
      .def_prop_ro("maximum", [](const xr::Result& r) { return scalar(r.maximum); })
      .def_prop_ro("dtype", [](const xr::Result& r) { return std::string(xr::to_string(r.value.type)); })
      .def_ro("n", &xr::Result::n)
      .def_prop_ro("op", [](const xr::Result& r) { return std::string(xr::to_string(r.op)); })
      .def_prop_ro("type", [](const xr::Result& r) { return std::string(xr::to_string(r.type)); })
      .def_ro("backend", &xr::Result::backend)
      .def_ro("device", &xr::Result::device)
      .def_ro("kernel", &xr::Result::kernel)
      .def_ro("finish", &xr::Result::finish)
      .def_ro("launches", &xr::Result::launches)
      .def_ro("kernel_ms", &xr::Result::kernel_ms)
      .def_ro("transfer_ms", &xr::Result::transfer_ms)
      .def_ro("total_ms", &xr::Result::total_ms)
      .def_ro("bytes_per_s", &xr::Result::bytes_per_s)
      .def_ro("path", &xr::Result::path)
      .def_ro("rounding_depth", &xr::Result::rounding_depth)
      .def("__repr__", [](const xr::Result& r) {
        std::string s = "Result(op=" + std::string(xr::to_string(r.op)) + ", type=" + std::string(xr::to_string(r.type)) +
                        ", value=" + r.value.to_string();
        if (xr::is_indexed(r.op)) s += ", index=" + std::to_string(r.index);
        if (r.op == xr::Op::MinMax) s += ", maximum=" + r.maximum.to_string();
        return s + ", n=" + std::to_string(r.n) + ", backend=" + r.backend + ", kernel=" + r.kernel + ")";
      });

  nb::class_<xr::Reducer>(m, "Reducer")
      .def(nb::new_([](const std::string& backend, int platform, const std::string& device) {
             nb::gil_scoped_release release;
             return xr::make_reducer(backend, xr::BackendOptions{platform, device});
           }),
           "backend"_a, "platform"_a = -1, "device"_a = "")
      .def_prop_ro("backend", &xr::Reducer::backend)
      .def_prop_ro("device", &xr::Reducer::device)
      .def("kernels", [](const xr::Reducer& r) {
        nb::list out;
        for (const auto& k : r.kernels()) out.append(kernel_dict(k));
        return out;
      })
      .def("segment_kernels", [](xr::Reducer& r) {
        nb::list out;
        for (const auto& k : r.segment_kernels()) out.append(kernel_dict(k));
        return out;
      })
      .def("reduce",
           [](xr::Reducer& r, std::uintptr_t data, std::uint64_t n, const std::string& dtype, const std::string& op,
              bool exact, const std::string& kernel, unsigned threads, const std::string& accumulator, int repeat,
              int warmup) {
             const xr::HostArray in{reinterpret_cast<const void*>(data), n, type_of(dtype)};
             const xr::Op o = op_of(op);
             xr::RunOptions options = run_options(exact, kernel, threads, accumulator);
             options.repeat = repeat;
             options.warmup = warmup;
             nb::gil_scoped_release release;
             return r.reduce(in, o, options);
           },
           "data"_a, "n"_a, "dtype"_a, "op"_a, "exact"_a = false, "kernel"_a = "auto", "threads"_a = 0,
           "accumulator"_a = "wide", "repeat"_a = 1, "warmup"_a = 0)
      .def("reduce_axis",
           [](xr::Reducer& r, std::uintptr_t data, const std::string& dtype, std::uint64_t rows, std::uint64_t cols,
              std::uint64_t stride, const std::string& order, int axis, const std::string& op, bool exact,
              const std::string& kernel, unsigned threads, const std::string& accumulator) {
             const xr::HostMatrix in{reinterpret_cast<const void*>(data), type_of(dtype),
                                     matrix_shape(rows, cols, stride, order)};
             const xr::Op o = op_of(op);
             const xr::RunOptions options = run_options(exact, kernel, threads, accumulator);
             xr::SegmentedResult result;
             {
               nb::gil_scoped_release release;
               result = r.reduce_axis(in, axis, o, options);
             }
             return segmented(std::move(result));
           },
           "data"_a, "dtype"_a, "rows"_a, "cols"_a, "stride"_a, "order"_a, "axis"_a, "op"_a, "exact"_a = false,
           "kernel"_a = "auto", "threads"_a = 0, "accumulator"_a = "wide")
      .def("reduce_segments",
           [](xr::Reducer& r, std::uintptr_t data, std::uint64_t n, const std::string& dtype, std::uintptr_t offsets,
              std::uint64_t n_offsets, const std::string& op, bool exact, const std::string& kernel, unsigned threads,
              const std::string& accumulator) {
             const xr::HostArray in{reinterpret_cast<const void*>(data), n, type_of(dtype)};
             const std::span<const std::int64_t> offs(reinterpret_cast<const std::int64_t*>(offsets), n_offsets);
             const xr::Op o = op_of(op);
             const xr::RunOptions options = run_options(exact, kernel, threads, accumulator);
             xr::SegmentedResult result;
             {
               nb::gil_scoped_release release;
               result = r.reduce_segments(in, offs, o, options);
             }
             return segmented(std::move(result));
           },
           "data"_a, "n"_a, "dtype"_a, "offsets"_a, "n_offsets"_a, "op"_a, "exact"_a = false, "kernel"_a = "auto",
           "threads"_a = 0, "accumulator"_a = "wide");

#ifdef XR_PYTHON_CUDA
  m.def("cuda_kernels", [] {
    nb::list out;
    for (const auto& k : xr::cuda::kernels()) out.append(kernel_dict(k));
    return out;
  });
  m.def("cuda_segment_kernels", [] {
    nb::list out;
    for (const auto& k : xr::cuda::segment_kernels()) out.append(kernel_dict(k));
    return out;
  });
  // Device pointers on `stream` (a cudaStream_t as an integer; 0: the legacy default stream).
  // The synchronous forms: each waits for its reduction and returns the record.
  m.def("cuda_reduce",
        [](std::uintptr_t data, std::uint64_t n, const std::string& dtype, const std::string& op, std::uintptr_t stream,
           bool exact, const std::string& kernel, const std::string& accumulator, int repeat, int warmup) {
          const xr::DType t = type_of(dtype);
          const xr::Op o = op_of(op);
          xr::RunOptions options = run_options(exact, kernel, 0, accumulator);
          options.repeat = repeat;
          options.warmup = warmup;
          nb::gil_scoped_release release;
          return with_device_pointer(data, t, [&](auto p) { return xr::cuda::reduce(p, n, o, stream_of(stream), options); });
        },
        "data"_a, "n"_a, "dtype"_a, "op"_a, "stream"_a, "exact"_a = false, "kernel"_a = "auto", "accumulator"_a = "wide",
        "repeat"_a = 1, "warmup"_a = 0);
  m.def("cuda_reduce_axis",
        [](std::uintptr_t data, const std::string& dtype, std::uint64_t rows, std::uint64_t cols, std::uint64_t stride,
           const std::string& order, int axis, const std::string& op, std::uintptr_t out, std::uintptr_t stream,
           bool exact, const std::string& kernel, const std::string& accumulator) {
          const xr::DType t = type_of(dtype);
          const xr::Op o = op_of(op);
          const xr::MatrixShape shape = matrix_shape(rows, cols, stride, order);
          const xr::RunOptions options = run_options(exact, kernel, 0, accumulator);
          nb::gil_scoped_release release;
          return with_device_pointer(data, t, [&](auto p) {
            return xr::cuda::reduce_axis(p, shape, axis, o, reinterpret_cast<void*>(out), stream_of(stream), options);
          });
        },
        "data"_a, "dtype"_a, "rows"_a, "cols"_a, "stride"_a, "order"_a, "axis"_a, "op"_a, "out"_a, "stream"_a,
        "exact"_a = false, "kernel"_a = "auto", "accumulator"_a = "wide");
  // The asynchronous forms: each enqueues its reduction on `stream`, writing to device memory at
  // `out`, and returns at once (cuda_reduce_async: exact sums rounded on the device; the lines of
  // reduce_axis have no exact mode here).
  m.def("cuda_reduce_async",
        [](std::uintptr_t data, std::uint64_t n, const std::string& dtype, const std::string& op, std::uintptr_t out,
           std::uintptr_t stream, bool exact, const std::string& kernel, const std::string& accumulator) {
          const xr::DType t = type_of(dtype);
          const xr::Op o = op_of(op);
          const xr::RunOptions options = run_options(exact, kernel, 0, accumulator);
          nb::gil_scoped_release release;
          with_device_pointer(data, t, [&](auto p) {
            xr::cuda::reduce_async(p, n, o, reinterpret_cast<void*>(out), stream_of(stream), options);
          });
        },
        "data"_a, "n"_a, "dtype"_a, "op"_a, "out"_a, "stream"_a, "exact"_a = false, "kernel"_a = "auto",
        "accumulator"_a = "wide");
  m.def("cuda_reduce_axis_async",
        [](std::uintptr_t data, const std::string& dtype, std::uint64_t rows, std::uint64_t cols, std::uint64_t stride,
           const std::string& order, int axis, const std::string& op, std::uintptr_t out, std::uintptr_t stream,
           const std::string& kernel, const std::string& accumulator) {
          const xr::DType t = type_of(dtype);
          const xr::Op o = op_of(op);
          const xr::MatrixShape shape = matrix_shape(rows, cols, stride, order);
          const xr::RunOptions options = run_options(false, kernel, 0, accumulator);
          nb::gil_scoped_release release;
          with_device_pointer(data, t, [&](auto p) {
            xr::cuda::reduce_axis_async(p, shape, axis, o, reinterpret_cast<void*>(out), stream_of(stream), options);
          });
        },
        "data"_a, "dtype"_a, "rows"_a, "cols"_a, "stride"_a, "order"_a, "axis"_a, "op"_a, "out"_a, "stream"_a,
        "kernel"_a = "auto", "accumulator"_a = "wide");
  // Waits for the work enqueued on `stream` (JAX's results: JAX cannot order its work after ours).
  m.def("cuda_synchronize", [](std::uintptr_t stream) {
    nb::gil_scoped_release release;
    xr::cuda::synchronize(stream_of(stream));
  }, "stream"_a);
  m.def("cuda_reduce_segments",
        [](std::uintptr_t data, std::uint64_t n, const std::string& dtype, std::uintptr_t offsets,
           std::uint64_t n_segments, const std::string& op, std::uintptr_t out, std::uintptr_t stream, bool exact,
           const std::string& kernel, const std::string& accumulator) {
          const xr::DType t = type_of(dtype);
          const xr::Op o = op_of(op);
          const xr::RunOptions options = run_options(exact, kernel, 0, accumulator);
          nb::gil_scoped_release release;
          return with_device_pointer(data, t, [&](auto p) {
            return xr::cuda::reduce_segments(p, n, reinterpret_cast<const std::int64_t*>(offsets), n_segments, o,
                                             reinterpret_cast<void*>(out), stream_of(stream), options);
          });
        },
        "data"_a, "n"_a, "dtype"_a, "offsets"_a, "n_segments"_a, "op"_a, "out"_a, "stream"_a, "exact"_a = false,
        "kernel"_a = "auto", "accumulator"_a = "wide");
#endif

  m.def("backend_statuses", [] {
    std::vector<xr::BackendStatus> statuses;
    {
      nb::gil_scoped_release release;
      statuses = xr::backend_statuses();
    }
    nb::list out;
    for (const auto& s : statuses) out.append(status_dict(s));
    return out;
  });
  m.def("result_dtype", [](const std::string& op, const std::string& type, const std::string& accumulator) {
    return std::string(xr::to_string(
        xr::result_dtype(op_of(op), type_of(type), run_options(false, "auto", 0, accumulator).accumulator)));
  }, "op"_a, "dtype"_a, "accumulator"_a = "wide");
  m.def("op_names", [] {
    std::vector<std::string> names;
    for (const auto& o : xr::op_table) names.emplace_back(o.name);
    return names;
  });
  m.def("dtype_names", [] {
    std::vector<std::string> names;
    for (const auto& t : xr::type_table) names.emplace_back(t.name);
    return names;
  });
}
