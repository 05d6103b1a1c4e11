# Warnings and the sanitizer switch, applied to every target of the project.
# ccache, when installed, caches compiles across build directories (base_dir in its config).
find_program(NCCLREC_CCACHE ccache)
if(NCCLREC_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER ${NCCLREC_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${NCCLREC_CCACHE})
endif()
add_compile_options(-Wall -Wextra -Wno-unused-parameter)

# NCCLREC_SANITIZE: one sanitizer or a comma-separated list of them (address and undefined go
# together in one build; thread goes alone). NCCLREC_SANITIZERS is the list, for the folders.
string(REPLACE "," ";" NCCLREC_SANITIZERS "${NCCLREC_SANITIZE}")
foreach(sanitizer ${NCCLREC_SANITIZERS})
  if(sanitizer STREQUAL "address")
    add_compile_options(-fsanitize=address -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address)
  elseif(sanitizer STREQUAL "thread")
    add_compile_options(-fsanitize=thread)
    add_link_options(-fsanitize=thread)
  elseif(sanitizer STREQUAL "undefined")
    add_compile_options(-fsanitize=undefined -fno-sanitize-recover=undefined)
    add_link_options(-fsanitize=undefined)
  else()
    message(FATAL_ERROR "NCCLREC_SANITIZE must be address, thread, undefined or address,undefined, "
                        "not '${NCCLREC_SANITIZE}'")
  endif()
endforeach()
if("thread" IN_LIST NCCLREC_SANITIZERS AND NOT NCCLREC_SANITIZE STREQUAL "thread")
  message(FATAL_ERROR "NCCLREC_SANITIZE: thread goes alone, not with '${NCCLREC_SANITIZE}'")
endif()
