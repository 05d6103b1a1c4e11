# `cmake --install`: the layout of docs/install.md. Every path is relative to the prefix and every
# RPATH is relative to the file ($ORIGIN), so the installed tree runs wherever it is copied.
#   bin/                       ncclrec-analyze, ncclrec-top, ncclrec-watch, ncclrec-exporter, cxxrun,
#                              ncclrec-trainer (when built)
#   lib/                       libncclrec.so, libncclrec_dump.so (dlopen'ed by it), libncclrec_format.so
#   lib/ncclrec/hostnccl/      hostnccl's libnccl.so.2, out of every default search path
#   lib/ncclrec/samples/       the sample programs (cxxrun --nccl=host gives them hostnccl)
#   lib/cmake/ncclrec/         find_package(ncclrec): ncclrec::format, ncclrec::store_client
#   include/ncclrec/           their headers
#   share/doc/ncclrec/         README and the manual
#   share/ncclrec/samples/     the samples' sources and expected verdicts
#   share/ncclrec/prometheus/  the alert rules and their promtool tests
#   share/ncclrec/grafana/     the dashboard and its provisioning file
# Component `bundled` (the relocatable tarball only, cmake/NcclrecPackage.cmake): the libraries
# outside glibc and libstdc++ that the above load, copied into lib/.
set(NCCLREC_INSTALL_LIB lib)
set(NCCLREC_INSTALL_PRIVATE ${NCCLREC_INSTALL_LIB}/ncclrec)

# DT_RPATH rather than DT_RUNPATH: a RUNPATH serves only the object's own DT_NEEDED, so the
# libraries bundled in lib/ (libdw -> libelf, gloo -> libibverbs, libunwind -> liblzma) would not
# find each other; an RPATH is searched for the whole chain of dependencies it starts. Only on
# files that link no libnccl.so.2 (the samples and the trainer carry no RPATH at all, so
# LD_LIBRARY_PATH can give them NVIDIA's NCCL).
function(ncclrec_install_rpath rpath)
  foreach(target IN LISTS ARGN)
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "${rpath}")
    target_link_options(${target} PRIVATE "LINKER:--disable-new-dtags")
  endforeach()
endfunction()

# A program copied as a file, not install(TARGETS), so the packages' stripping (CPACK_STRIP_FILES)
# leaves it its symbols and debug info: a verdict names its functions and file:line from them. Its
# build-tree RUNPATH (build/hostnccl) is removed: cxxrun --nccl or LD_LIBRARY_PATH picks its NCCL.
function(ncclrec_install_unstripped target destination)
  install(PROGRAMS $<TARGET_FILE:${target}> DESTINATION ${destination} COMPONENT runtime)
  install(CODE "file(RPATH_REMOVE FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${destination}/$<TARGET_FILE_NAME:${target}>\")"
          COMPONENT runtime)
endfunction()

# The trainer is left out of the bundled libraries: they would be LibTorch's hundreds of MB. The
# .deb depends on Debian's LibTorch for it; with the tarball it needs the target's LibTorch.
if(NCCLREC_BUILD_TRAINER)
  ncclrec_install_unstripped(ncclrec-trainer bin)
endif()
ncclrec_install_rpath("$ORIGIN/../${NCCLREC_INSTALL_LIB}" ncclrec-analyze ncclrec-top ncclrec-watch
                      ncclrec-exporter cxxrun)
ncclrec_install_rpath("$ORIGIN" ncclrec_interpose ncclrec_dump ncclrec_format)
ncclrec_install_rpath("$ORIGIN/../.." hostnccl)

install(TARGETS ncclrec-analyze ncclrec-top ncclrec-watch ncclrec-exporter cxxrun ncclrec_interpose
                ncclrec_dump
        RUNTIME_DEPENDENCY_SET ncclrec_runtime_deps
        RUNTIME DESTINATION bin COMPONENT runtime
        LIBRARY DESTINATION ${NCCLREC_INSTALL_LIB} COMPONENT runtime)
install(TARGETS hostnccl RUNTIME_DEPENDENCY_SET ncclrec_runtime_deps
        LIBRARY DESTINATION ${NCCLREC_INSTALL_PRIVATE}/hostnccl COMPONENT runtime
        NAMELINK_SKIP)

# The dump reader and the store client for other C++ projects: find_package(ncclrec).
set_target_properties(ncclrec_format PROPERTIES EXPORT_NAME format)
set_target_properties(ncclrec_format_core PROPERTIES EXPORT_NAME format_core)
set_target_properties(ncclrec_base PROPERTIES EXPORT_NAME base)
set_target_properties(ncclrec_store_client PROPERTIES EXPORT_NAME store_client)
install(TARGETS ncclrec_format EXPORT ncclrecTargets RUNTIME_DEPENDENCY_SET ncclrec_runtime_deps
        LIBRARY DESTINATION ${NCCLREC_INSTALL_LIB} COMPONENT runtime)
install(TARGETS ncclrec_base ncclrec_format_core ncclrec_store_client EXPORT ncclrecTargets
        ARCHIVE DESTINATION ${NCCLREC_INSTALL_LIB} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/base/ DESTINATION include/ncclrec/base
        COMPONENT runtime FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/format/ DESTINATION include/ncclrec/format
        COMPONENT runtime FILES_MATCHING PATTERN "*.h" PATTERN "testing" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/format/gen/format/ncclrec.pb.h
              ${PROJECT_SOURCE_DIR}/format/ncclrec.proto
        DESTINATION include/ncclrec/format COMPONENT runtime)
install(EXPORT ncclrecTargets NAMESPACE ncclrec:: DESTINATION ${NCCLREC_INSTALL_LIB}/cmake/ncclrec
        COMPONENT runtime)
include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ncclrecConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ncclrecConfig.cmake
  INSTALL_DESTINATION ${NCCLREC_INSTALL_LIB}/cmake/ncclrec)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ncclrecConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ncclrecConfig.cmake
        ${CMAKE_CURRENT_BINARY_DIR}/ncclrecConfigVersion.cmake
        DESTINATION ${NCCLREC_INSTALL_LIB}/cmake/ncclrec COMPONENT runtime)

# Samples: the programs (unstripped, as the trainer) and the sources.
get_property(NCCLREC_HOST_SAMPLES GLOBAL PROPERTY NCCLREC_HOST_SAMPLES)
foreach(sample IN LISTS NCCLREC_HOST_SAMPLES)
  ncclrec_install_unstripped(sample_${sample} ${NCCLREC_INSTALL_PRIVATE}/samples)
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/samples/ DESTINATION share/ncclrec/samples
        COMPONENT runtime PATTERN "CMakeLists.txt" EXCLUDE)

# Metrics: the alert rules and the Grafana dashboard (docs/metrics.md).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/metrics/prometheus ${PROJECT_SOURCE_DIR}/metrics/grafana
        DESTINATION share/ncclrec COMPONENT runtime)

# Every target the install rules take files from, as one target: scripts/wheel.sh builds it
# rather than `all`, which builds the tests too.
add_custom_target(ncclrec_installed)
add_dependencies(ncclrec_installed ncclrec-analyze ncclrec-top ncclrec-watch cxxrun
                 ncclrec-exporter ncclrec_interpose ncclrec_dump ncclrec_format
                 ncclrec_format_core ncclrec_base hostnccl)
foreach(sample IN LISTS NCCLREC_HOST_SAMPLES)
  add_dependencies(ncclrec_installed sample_${sample})
endforeach()
if(NCCLREC_BUILD_TRAINER)
  add_dependencies(ncclrec_installed ncclrec-trainer)
endif()

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/ncclrec COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/ncclrec/docs
        COMPONENT runtime)

# The bundled libraries: every shared library the installed files load at start (DT_NEEDED,
# transitively) and the one the shim dlopens (libunwind), except glibc's, libstdc++ and libgcc_s
# (the target's own) and ours.
find_library(NCCLREC_LIBUNWIND_LIBRARY NAMES libunwind.so.8)
set(NCCLREC_BUNDLE_EXTRA "")
if(NCCLREC_LIBUNWIND_LIBRARY)
  get_filename_component(NCCLREC_LIBUNWIND_LIBRARY ${NCCLREC_LIBUNWIND_LIBRARY} REALPATH)
  install(FILES ${NCCLREC_LIBUNWIND_LIBRARY} DESTINATION ${NCCLREC_INSTALL_LIB}
          RENAME libunwind.so.8 COMPONENT bundled EXCLUDE_FROM_ALL)
  set(NCCLREC_BUNDLE_EXTRA ${NCCLREC_LIBUNWIND_LIBRARY})
endif()
set(NCCLREC_BUNDLE_EXCLUDE
  "^ld-linux" "^libc\\.so" "^libm\\.so" "^libdl\\.so" "^librt\\.so" "^libpthread\\.so"
  "^libstdc\\+\\+\\.so" "^libgcc_s\\.so" "^libncclrec" "^libnccl\\.so" "^linux-vdso")
install(RUNTIME_DEPENDENCY_SET ncclrec_runtime_deps
        PRE_EXCLUDE_REGEXES ${NCCLREC_BUNDLE_EXCLUDE}
        POST_EXCLUDE_REGEXES "^${CMAKE_BINARY_DIR}/"
        DIRECTORIES ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}
        LIBRARY DESTINATION ${NCCLREC_INSTALL_LIB} COMPONENT bundled EXCLUDE_FROM_ALL)
# libunwind's own dependencies (liblzma) are libdw's too, so the set above already carries them.
