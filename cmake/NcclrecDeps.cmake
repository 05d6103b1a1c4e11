# Third-party dependencies, all Debian packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
# Prometheus' data model, text format and HTTP endpoint (civetweb) for the metrics (metrics/).
find_package(prometheus-cpp CONFIG REQUIRED)

# libdw (elfutils) gives file:line at dump time; without it dumps carry function names only.
find_path(NCCLREC_LIBDW_INCLUDE elfutils/libdwfl.h)
find_library(NCCLREC_LIBDW_LIBRARY dw)
if(NCCLREC_LIBDW_INCLUDE AND NCCLREC_LIBDW_LIBRARY)
  set(NCCLREC_HAVE_LIBDW ON)
else()
  set(NCCLREC_HAVE_LIBDW OFF)
  message(STATUS "ncclrec: libdw not found: dumps will name functions but not file:line")
endif()

# The real NCCL, when installed (CUDA toolkit layout or a distribution package). Used only by
# tests that check our header against it and run the shim over it; nothing links it otherwise.
find_path(NCCLREC_REAL_NCCL_INCLUDE nccl.h
          HINTS ENV NCCL_HOME ENV CUDA_HOME /usr/local/cuda PATH_SUFFIXES include
          NO_DEFAULT_PATH)
find_library(NCCLREC_REAL_NCCL_LIBRARY NAMES libnccl.so.2 nccl
             HINTS ENV NCCL_HOME ENV CUDA_HOME /usr/local/cuda PATH_SUFFIXES lib64 lib
             NO_DEFAULT_PATH)
find_path(NCCLREC_CUDA_INCLUDE cuda_runtime_api.h
          HINTS ENV CUDA_HOME /usr/local/cuda PATH_SUFFIXES include NO_DEFAULT_PATH)
if(NCCLREC_REAL_NCCL_INCLUDE AND NCCLREC_REAL_NCCL_LIBRARY AND NCCLREC_CUDA_INCLUDE)
  set(NCCLREC_REAL_NCCL_FOUND ON)
else()
  set(NCCLREC_REAL_NCCL_FOUND OFF)
endif()

# LibTorch (Debian libtorch-dev, CPU) for the reference trainer only; nothing else links it.
find_package(Torch QUIET)

if(NCCLREC_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # The test sources (those of every target that links GTest::gtest_main) compile without
  # optimization, while the code under test keeps the build type's flags: they were half of the
  # build's compile time, and take about a third less that way (docs/performance.md, "What CI
  # costs"). NCCLREC_TEST_CXX_FLAGS="" gives them the build type's flags too.
  set(NCCLREC_TEST_CXX_FLAGS "-O0" CACHE STRING "Compile flags added to the test sources")
  if(NCCLREC_TEST_CXX_FLAGS)
    separate_arguments(ncclrec_test_flags UNIX_COMMAND "${NCCLREC_TEST_CXX_FLAGS}")
    set_property(TARGET GTest::gtest_main APPEND PROPERTY INTERFACE_COMPILE_OPTIONS
                 ${ncclrec_test_flags})
  endif()
  find_package(benchmark REQUIRED)
endif()
