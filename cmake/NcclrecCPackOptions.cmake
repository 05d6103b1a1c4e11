# Read by cpack once per generator (CPACK_PROJECT_CONFIG_FILE). The .deb: the installed tree under
# /usr, every component but `bundled` (EXCLUDE_FROM_ALL), Debian's libraries as Depends. The
# tarball: relative paths (it unpacks anywhere), and components `runtime` and `bundled` (the
# libraries it carries) in one archive.
if(CPACK_GENERATOR STREQUAL "TGZ")
  set(CPACK_PACKAGING_INSTALL_PREFIX "/")
  set(CPACK_ARCHIVE_COMPONENT_INSTALL ON)
  set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
  set(CPACK_COMPONENT_INCLUDE_TOPLEVEL_DIRECTORY ON)
  set(CPACK_COMPONENTS_ALL runtime bundled)
endif()
