// Element encoding for the conformance reference, independent of hostnccl's own conversions:
// inputs are small integers, exactly representable in every NCCL type, and results are decoded
// to double and compared with a tolerance that reflects each type's precision.
#pragma once

#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>

namespace ncclrec::hostnccl::testing {

inline size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

inline bool isSigned(ncclDataType_t t) {
  return t != ncclUint8 && t != ncclUint32 && t != ncclUint64;
}
inline bool isFp8(ncclDataType_t t) { return t == ncclFloat8e4m3 || t == ncclFloat8e5m2; }
inline bool isFloat(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 ||
         t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

// value = (-1)^s * 2^(e-bias) * 1.m, with the format's special cases.
inline double decodeMini(unsigned bits, int expBits, int manBits, bool ieeeSpecials) {
  unsigned sign = (bits >> (expBits + manBits)) & 1, e = (bits >> manBits) & ((1u << expBits) - 1);
  unsigned m = bits & ((1u << manBits) - 1);
  int bias = (1 << (expBits - 1)) - 1;
  double v;
  if (ieeeSpecials && e == (1u << expBits) - 1) {
    v = m ? NAN : INFINITY;
  } else if (!ieeeSpecials && e == (1u << expBits) - 1 && m == (1u << manBits) - 1) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(m, 1 - bias - manBits);
  } else {
    v = std::ldexp(m + (1u << manBits), static_cast<int>(e) - bias - manBits);
  }
  return sign ? -v : v;
}

// Buffers of the suite may sit at any byte offset: values are copied, never dereferenced in place.
template <typename T>
T loadAs(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename T>
void storeAs(void* p, T v) {
  std::memcpy(p, &v, sizeof(v));
}

inline double decode(ncclDataType_t t, const void* p) {
  switch (t) {
    case ncclInt8:
      return loadAs<int8_t>(p);
    case ncclUint8:
      return loadAs<uint8_t>(p);
    case ncclInt32:
      return loadAs<int32_t>(p);
    case ncclUint32:
      return loadAs<uint32_t>(p);
    case ncclInt64:
      return static_cast<double>(loadAs<int64_t>(p));
    case ncclUint64:
      return static_cast<double>(loadAs<uint64_t>(p));
    case ncclFloat32:
      return loadAs<float>(p);
    case ncclFloat64:
      return loadAs<double>(p);
    case ncclFloat16:
      return decodeMini(loadAs<uint16_t>(p), 5, 10, true);
    case ncclBfloat16:
      return decodeMini(loadAs<uint16_t>(p), 8, 7, true);
    case ncclFloat8e4m3:
      return decodeMini(loadAs<uint8_t>(p), 4, 3, false);
    case ncclFloat8e5m2:
      return decodeMini(loadAs<uint8_t>(p), 5, 2, true);
    default:
      return NAN;
  }
}

// Exact encoding of a value the type can represent (the inputs of the suite are).
inline void encode(ncclDataType_t t, double v, void* p) {
  switch (t) {
    case ncclInt8:
      storeAs<int8_t>(p, static_cast<int8_t>(v));
      return;
    case ncclUint8:
      storeAs<uint8_t>(p, static_cast<uint8_t>(v));
      return;
    case ncclInt32:
      storeAs<int32_t>(p, static_cast<int32_t>(v));
      return;
    case ncclUint32:
      storeAs<uint32_t>(p, static_cast<uint32_t>(v));
      return;
    case ncclInt64:
      storeAs<int64_t>(p, static_cast<int64_t>(v));
      return;
    case ncclUint64:
      storeAs<uint64_t>(p, static_cast<uint64_t>(v));
      return;
    case ncclFloat32:
      storeAs<float>(p, static_cast<float>(v));
      return;
    case ncclFloat64:
      storeAs<double>(p, v);
      return;
    default:
      break;
  }
  static std::map<std::pair<int, double>, unsigned> cache;
  auto key = std::make_pair(static_cast<int>(t), v);
  auto it = cache.find(key);
  if (it == cache.end()) {
    unsigned limit = typeSize(t) == 1 ? 0x100 : 0x10000, found = 0;
    for (unsigned bits = 0; bits < limit; ++bits) {
      if (decode(t, &bits) == v) {
        found = bits;
        break;
      }
    }
    it = cache.emplace(key, found).first;
  }
  std::memcpy(p, &it->second, typeSize(t));  // little-endian: low bytes hold the code
}

// Relative precision of one rounding step of each type.
inline double epsilon(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
      return std::ldexp(1.0, -10);
    case ncclBfloat16:
      return std::ldexp(1.0, -7);
    case ncclFloat8e4m3:
      return std::ldexp(1.0, -3);
    case ncclFloat8e5m2:
      return std::ldexp(1.0, -2);
    case ncclFloat32:
      return 1e-6;
    case ncclFloat64:
      return 1e-12;
    default:
      return 0;
  }
}

}  // namespace ncclrec::hostnccl::testing
