// Element-wise arithmetic on NCCL datatypes in host memory. Half, bfloat16 and the fp8 types are
// converted through float for arithmetic and rounded back (round to nearest even; fp8 saturates
// to its largest finite value, as CUDA's __nv_fp8 conversions do).
#pragma once

#include <cstddef>
#include <cstdint>

#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

// Bytes per element; 0 for an invalid datatype.
size_t dtypeSize(ncclDataType_t dtype);
const char* dtypeName(ncclDataType_t dtype);
bool isFloatingType(ncclDataType_t dtype);

enum class ReduceKind { kSum, kProd, kMax, kMin };

// dst[i] = dst[i] (op) src[i]
void reduceInto(void* dst, const void* src, size_t count, ncclDataType_t dtype, ReduceKind kind);

// dst[i] = src[i] * scalar, where `scalar` points to one element of `dtype`. dst may equal src.
void scaleCopy(void* dst, const void* src, size_t count, ncclDataType_t dtype, const void* scalar);

// buf[i] /= divisor (integer division truncating toward zero for integer types).
void divideInPlace(void* buf, size_t count, ncclDataType_t dtype, int divisor);

// Writes 1/n as one element of `dtype` into `out` (for ncclAvg on floating types).
void reciprocalScalar(int n, ncclDataType_t dtype, void* out);

// Conversions, exposed for tests.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);
float e4m3ToFloat(uint8_t v);
uint8_t floatToE4m3(float f);
float e5m2ToFloat(uint8_t v);
uint8_t floatToE5m2(float f);

}  // namespace ncclrec::hostnccl
