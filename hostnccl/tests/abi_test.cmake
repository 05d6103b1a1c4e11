# hostnccl_abi_test: third_party/nccl/nccl.h against NVIDIA's nccl.h. Included from
# hostnccl/tests/CMakeLists.txt. The two headers define the same names, so each is compiled in its
# own object library (abi_real.cc sees only NVIDIA's, abi_ours.cc only ours) and the test compares
# the tables they export.
get_filename_component(NCCLREC_ABI_REPO_ROOT ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)

if(NOT NCCLREC_REAL_NCCL_FOUND)
  # Reported as skipped, never silently absent.
  add_test(NAME hostnccl_abi_test
           COMMAND /bin/sh -c "echo 'SKIPPED: real NCCL header not found'; exit 77")
  set_tests_properties(hostnccl_abi_test PROPERTIES SKIP_RETURN_CODE 77)
  return()
endif()

add_library(hostnccl_abi_real OBJECT ${CMAKE_CURRENT_LIST_DIR}/abi_real.cc)
target_include_directories(hostnccl_abi_real PRIVATE ${NCCLREC_ABI_REPO_ROOT})
target_include_directories(hostnccl_abi_real SYSTEM PRIVATE ${NCCLREC_REAL_NCCL_INCLUDE}
                           ${NCCLREC_CUDA_INCLUDE})

add_library(hostnccl_abi_ours OBJECT ${CMAKE_CURRENT_LIST_DIR}/abi_ours.cc)
target_include_directories(hostnccl_abi_ours PRIVATE ${NCCLREC_ABI_REPO_ROOT})
target_link_libraries(hostnccl_abi_ours PRIVATE nccl_api)

add_executable(hostnccl_abi_test ${CMAKE_CURRENT_LIST_DIR}/abi_test.cc)
target_include_directories(hostnccl_abi_test PRIVATE ${NCCLREC_ABI_REPO_ROOT})
target_link_libraries(hostnccl_abi_test PRIVATE hostnccl_abi_real hostnccl_abi_ours
                      GTest::gtest_main)
target_compile_definitions(hostnccl_abi_test PRIVATE
  NCCLREC_REAL_NCCL_HEADER="${NCCLREC_REAL_NCCL_INCLUDE}/nccl.h"
  NCCLREC_OUR_NCCL_HEADER="${NCCLREC_ABI_REPO_ROOT}/third_party/nccl/nccl.h")
add_test(NAME hostnccl_abi_test COMMAND hostnccl_abi_test)
