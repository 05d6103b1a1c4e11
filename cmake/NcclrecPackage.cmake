# CPack: a Debian 12 .deb (the installed tree under /usr, with the Debian packages it needs as
# dependencies) and a relocatable .tar.gz (the same tree plus component `bundled`: every library
# outside glibc, libstdc++ and libgcc_s it loads). Build both with
#   cmake --build build --target package       (or: cd build && cpack)
# docs/install.md has the layout and the glibc each needs.
set(CPACK_PACKAGE_NAME ncclrec)
set(CPACK_PACKAGE_VENDOR "ncclrec")
set(CPACK_PACKAGE_CONTACT "ncclrec maintainers <ncclrec@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_PACKAGE_FILE_NAME ncclrec-${PROJECT_VERSION}-Linux-${CMAKE_SYSTEM_PROCESSOR})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# One package per generator; what each takes (prefix, components) is set per generator in
# NcclrecCPackOptions.cmake.
set(CPACK_DEB_COMPONENT_INSTALL OFF)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/NcclrecCPackOptions.cmake)

# Strip what install(TARGETS) installs (RelWithDebInfo builds carry -g); the samples are installed
# as files and keep their symbols, as the trainer does (cmake/NcclrecInstall.cmake).
set(CPACK_STRIP_FILES ON)

# .deb: dpkg-shlibdeps derives Depends from the ELF files; libunwind8 is dlopen'ed by the shim,
# which dpkg-shlibdeps cannot see.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libunwind8")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Our own libraries (libncclrec_format.so, hostnccl's libnccl.so.2) are in the package and no shlibs
# file describes them: naming private directories makes CPack pass --ignore-missing-info (and -l).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS /usr/lib /usr/lib/ncclrec/hostnccl)
include(CPack)
