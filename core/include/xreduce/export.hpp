// XR_API marks what libxreduce exports. The library is compiled with hidden visibility, so a
// symbol the headers do not mark stays inside it. Classes are marked whole (their vtables and
// typeinfo are exported too, which the exception classes need for catch in applications),
// free functions one by one.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define XR_API __attribute__((visibility("default")))
#else
#define XR_API
#endif
