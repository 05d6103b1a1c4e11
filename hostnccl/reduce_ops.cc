#include "hostnccl/reduce_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ncclrec::hostnccl {
namespace {

// An IEEE-style binary format with `kExp` exponent and `kMan` mantissa bits. `kHasInf`: the
// all-ones exponent means inf/NaN (half, e5m2); otherwise only all-ones is NaN (e4m3fn) and
// overflow saturates.
template <int kExp, int kMan, bool kHasInf>
struct MiniFloat {
  static constexpr int kBias = (1 << (kExp - 1)) - 1;
  static constexpr unsigned kExpMax = (1u << kExp) - 1;

  static double maxFinite() {
    if (kHasInf)
      return std::ldexp(2.0 - std::ldexp(1.0, -kMan), static_cast<int>(kExpMax) - 1 - kBias);
    // e4m3fn: exponent all-ones is usable except mantissa all-ones (NaN).
    return std::ldexp(2.0 - std::ldexp(2.0, -kMan), static_cast<int>(kExpMax) - kBias);
  }

  static float decode(unsigned bits) {
    unsigned sign = (bits >> (kExp + kMan)) & 1u;
    unsigned e = (bits >> kMan) & kExpMax;
    unsigned m = bits & ((1u << kMan) - 1);
    double v;
    if (e == kExpMax && kHasInf) {
      v = m == 0 ? std::numeric_limits<double>::infinity()
                 : std::numeric_limits<double>::quiet_NaN();
    } else if (e == kExpMax && !kHasInf && m == (1u << kMan) - 1) {
      v = std::numeric_limits<double>::quiet_NaN();
    } else if (e == 0) {
      v = std::ldexp(static_cast<double>(m), 1 - kBias - kMan);
    } else {
      v = std::ldexp(static_cast<double>(m | (1u << kMan)), static_cast<int>(e) - kBias - kMan);
    }
    return static_cast<float>(sign ? -v : v);
  }

  static unsigned encode(float f) {
    unsigned sign = std::signbit(f) ? 1u : 0u;
    unsigned signBits = sign << (kExp + kMan);
    if (std::isnan(f)) {
      return signBits | (kExpMax << kMan) | ((1u << kMan) - 1);
    }
    double a = std::fabs(static_cast<double>(f));
    if (std::isinf(f) && kHasInf) return signBits | (kExpMax << kMan);
    if (a == 0) return signBits;
    int exp;
    std::frexp(a, &exp);  // a = frac * 2^exp, frac in [0.5, 1)
    int e = std::max(exp - 1, 1 - kBias);
    double quantum = std::ldexp(1.0, e - kMan);
    double r = std::nearbyint(a / quantum) * quantum;  // round half to even
    if (r > maxFinite()) {
      if (kHasInf) {
        // IEEE: values that round above the largest finite become infinity.
        return signBits | (kExpMax << kMan);
      }
      r = maxFinite();
    }
    if (r == 0) return signBits;
    std::frexp(r, &exp);
    e = exp - 1;
    if (e < 1 - kBias) {
      unsigned m = static_cast<unsigned>(std::ldexp(r, kBias - 1 + kMan));
      return signBits | m;
    }
    unsigned m = static_cast<unsigned>(std::ldexp(r, kMan - e)) - (1u << kMan);
    return signBits | (static_cast<unsigned>(e + kBias) << kMan) | m;
  }
};

using Half = MiniFloat<5, 10, true>;
using E4m3 = MiniFloat<4, 3, false>;
using E5m2 = MiniFloat<5, 2, true>;

template <typename T>
T apply(T a, T b, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      return static_cast<T>(a + b);
    case ReduceKind::kProd:
      return static_cast<T>(a * b);
    case ReduceKind::kMax:
      return std::max(a, b);
    case ReduceKind::kMin:
      return std::min(a, b);
  }
  return a;
}

// Unsigned wrap-around for integer sums and products, as on the GPU (no signed overflow UB).
template <typename T, typename U>
void reduceIntegers(T* d, const T* s, size_t n, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      for (size_t i = 0; i < n; ++i)
        d[i] = static_cast<T>(static_cast<U>(d[i]) + static_cast<U>(s[i]));
      break;
    case ReduceKind::kProd:
      for (size_t i = 0; i < n; ++i)
        d[i] = static_cast<T>(static_cast<U>(d[i]) * static_cast<U>(s[i]));
      break;
    case ReduceKind::kMax:
      for (size_t i = 0; i < n; ++i) d[i] = std::max(d[i], s[i]);
      break;
    case ReduceKind::kMin:
      for (size_t i = 0; i < n; ++i) d[i] = std::min(d[i], s[i]);
      break;
  }
}

template <typename T>
void reduceFloats(T* d, const T* s, size_t n, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      for (size_t i = 0; i < n; ++i) d[i] = d[i] + s[i];
      break;
    case ReduceKind::kProd:
      for (size_t i = 0; i < n; ++i) d[i] = d[i] * s[i];
      break;
    // NaN propagates like CUDA's fmax/fmin do not; NCCL uses a > b ? a : b, so do the same.
    case ReduceKind::kMax:
      for (size_t i = 0; i < n; ++i) d[i] = d[i] > s[i] ? d[i] : s[i];
      break;
    case ReduceKind::kMin:
      for (size_t i = 0; i < n; ++i) d[i] = d[i] < s[i] ? d[i] : s[i];
      break;
  }
}

template <typename Bits, float (*kDecode)(Bits), Bits (*kEncode)(float)>
void reduceViaFloat(Bits* d, const Bits* s, size_t n, ReduceKind kind) {
  for (size_t i = 0; i < n; ++i) d[i] = kEncode(apply(kDecode(d[i]), kDecode(s[i]), kind));
}

template <typename T>
void scaleTyped(T* d, const T* s, size_t n, T k) {
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(s[i] * k);
}

template <typename Bits, float (*kDecode)(Bits), Bits (*kEncode)(float)>
void scaleViaFloat(Bits* d, const Bits* s, size_t n, Bits k) {
  float kf = kDecode(k);
  for (size_t i = 0; i < n; ++i) d[i] = kEncode(kDecode(s[i]) * kf);
}

template <typename T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

float halfToFloat(uint16_t h) { return Half::decode(h); }
uint16_t floatToHalf(float f) { return static_cast<uint16_t>(Half::encode(f)); }
float e4m3ToFloat(uint8_t v) { return E4m3::decode(v); }
uint8_t floatToE4m3(float f) { return static_cast<uint8_t>(E4m3::encode(f)); }
float e5m2ToFloat(uint8_t v) { return E5m2::decode(v); }
uint8_t floatToE5m2(float f) { return static_cast<uint8_t>(E5m2::encode(f)); }

float bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

size_t dtypeSize(ncclDataType_t dtype) {
  switch (dtype) {
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
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* dtypeName(ncclDataType_t dtype) {
  static const char* const kNames[] = {"int8",    "uint8",    "int32",      "uint32",
                                       "int64",   "uint64",   "float16",    "float32",
                                       "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  int i = static_cast<int>(dtype);
  return i >= 0 && i < ncclNumTypes ? kNames[i] : "invalid";
}

bool isFloatingType(ncclDataType_t dtype) {
  return dtype == ncclFloat16 || dtype == ncclFloat32 || dtype == ncclFloat64 ||
         dtype == ncclBfloat16 || dtype == ncclFloat8e4m3 || dtype == ncclFloat8e5m2;
}

void reduceInto(void* dst, const void* src, size_t n, ncclDataType_t dtype, ReduceKind kind) {
  switch (dtype) {
    case ncclInt8:
      return reduceIntegers<int8_t, uint8_t>(static_cast<int8_t*>(dst),
                                             static_cast<const int8_t*>(src), n, kind);
    case ncclUint8:
      return reduceIntegers<uint8_t, uint32_t>(static_cast<uint8_t*>(dst),
                                               static_cast<const uint8_t*>(src), n, kind);
    case ncclInt32:
      return reduceIntegers<int32_t, uint32_t>(static_cast<int32_t*>(dst),
                                               static_cast<const int32_t*>(src), n, kind);
    case ncclUint32:
      return reduceIntegers<uint32_t, uint32_t>(static_cast<uint32_t*>(dst),
                                                static_cast<const uint32_t*>(src), n, kind);
    case ncclInt64:
      return reduceIntegers<int64_t, uint64_t>(static_cast<int64_t*>(dst),
                                               static_cast<const int64_t*>(src), n, kind);
    case ncclUint64:
      return reduceIntegers<uint64_t, uint64_t>(static_cast<uint64_t*>(dst),
                                                static_cast<const uint64_t*>(src), n, kind);
    case ncclFloat32:
      return reduceFloats(static_cast<float*>(dst), static_cast<const float*>(src), n, kind);
    case ncclFloat64:
      return reduceFloats(static_cast<double*>(dst), static_cast<const double*>(src), n, kind);
    case ncclFloat16:
      return reduceViaFloat<uint16_t, halfToFloat, floatToHalf>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, kind);
    case ncclBfloat16:
      return reduceViaFloat<uint16_t, bf16ToFloat, floatToBf16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, kind);
    case ncclFloat8e4m3:
      return reduceViaFloat<uint8_t, e4m3ToFloat, floatToE4m3>(
          static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, kind);
    case ncclFloat8e5m2:
      return reduceViaFloat<uint8_t, e5m2ToFloat, floatToE5m2>(
          static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, kind);
    default:
      return;
  }
}

void scaleCopy(void* dst, const void* src, size_t n, ncclDataType_t dtype, const void* k) {
  switch (dtype) {
    case ncclInt8:
      return scaleTyped(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), n,
                        load<int8_t>(k));
    case ncclUint8:
      return scaleTyped(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n,
                        load<uint8_t>(k));
    case ncclInt32:
      return scaleTyped(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n,
                        load<int32_t>(k));
    case ncclUint32:
      return scaleTyped(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), n,
                        load<uint32_t>(k));
    case ncclInt64:
      return scaleTyped(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n,
                        load<int64_t>(k));
    case ncclUint64:
      return scaleTyped(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), n,
                        load<uint64_t>(k));
    case ncclFloat32:
      return scaleTyped(static_cast<float*>(dst), static_cast<const float*>(src), n,
                        load<float>(k));
    case ncclFloat64:
      return scaleTyped(static_cast<double*>(dst), static_cast<const double*>(src), n,
                        load<double>(k));
    case ncclFloat16:
      return scaleViaFloat<uint16_t, halfToFloat, floatToHalf>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, load<uint16_t>(k));
    case ncclBfloat16:
      return scaleViaFloat<uint16_t, bf16ToFloat, floatToBf16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, load<uint16_t>(k));
    case ncclFloat8e4m3:
      return scaleViaFloat<uint8_t, e4m3ToFloat, floatToE4m3>(
          static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, load<uint8_t>(k));
    case ncclFloat8e5m2:
      return scaleViaFloat<uint8_t, e5m2ToFloat, floatToE5m2>(
          static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, load<uint8_t>(k));
    default:
      return;
  }
}

namespace {
template <typename T>
void divideTyped(T* b, size_t n, int divisor) {
  T d = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<T>(b[i] / d);
}
}  // namespace

void divideInPlace(void* buf, size_t n, ncclDataType_t dtype, int divisor) {
  switch (dtype) {
    case ncclInt8:
      return divideTyped(static_cast<int8_t*>(buf), n, divisor);
    case ncclUint8:
      return divideTyped(static_cast<uint8_t*>(buf), n, divisor);
    case ncclInt32:
      return divideTyped(static_cast<int32_t*>(buf), n, divisor);
    case ncclUint32:
      return divideTyped(static_cast<uint32_t*>(buf), n, divisor);
    case ncclInt64:
      return divideTyped(static_cast<int64_t*>(buf), n, divisor);
    case ncclUint64:
      return divideTyped(static_cast<uint64_t*>(buf), n, divisor);
    default: {
      // Floating types: multiply by the reciprocal, as NCCL does.
      alignas(8) unsigned char k[8];
      reciprocalScalar(divisor, dtype, k);
      scaleCopy(buf, buf, n, dtype, k);
    }
  }
}

void reciprocalScalar(int n, ncclDataType_t dtype, void* out) {
  double r = 1.0 / n;
  switch (dtype) {
    case ncclFloat32: {
      float f = static_cast<float>(r);
      std::memcpy(out, &f, 4);
      break;
    }
    case ncclFloat64:
      std::memcpy(out, &r, 8);
      break;
    case ncclFloat16: {
      uint16_t h = floatToHalf(static_cast<float>(r));
      std::memcpy(out, &h, 2);
      break;
    }
    case ncclBfloat16: {
      uint16_t b = floatToBf16(static_cast<float>(r));
      std::memcpy(out, &b, 2);
      break;
    }
    case ncclFloat8e4m3:
      *static_cast<uint8_t*>(out) = floatToE4m3(static_cast<float>(r));
      break;
    case ncclFloat8e5m2:
      *static_cast<uint8_t*>(out) = floatToE5m2(static_cast<float>(r));
      break;
    default:
      std::memset(out, 0, dtypeSize(dtype));
  }
}

}  // namespace ncclrec::hostnccl
