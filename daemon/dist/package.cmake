# The Debian packages, made by "cpack -G DEB" in the build folder. Included
# at the end of the top-level CMakeLists.txt, after every install rule. One
# package per install component, as Debian splits a server and its client
# library:
#
#   shmkv         (server)  shmkvd, its configuration, its systemd unit
#   libshmkv0     (lib)     libshmkv.so.0, for programs linked with it
#   libshmkv-dev  (dev)     the header, the static library, shmkv.pc
#
# Everything is installed under the prefix /usr, so the configuration goes
# to /etc/shmkv and the unit to /lib/systemd/system (install.cmake). The
# Depends of the binaries come from dpkg-shlibdeps (dpkg-dev), which needs
# file(1) to find them. The maintainer scripts in deb/ create the user and
# enable the service; docs/operations.md describes the result.
set(CPACK_PACKAGE_NAME shmkv)
set(CPACK_PACKAGE_VENDOR shmkv)
if(NOT CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "shmkv maintainers") # the Maintainer field; -D to name one
endif()
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL server lib dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Each package's Description is its component's: the first line is the
# summary (no CPACK_PACKAGE_DESCRIPTION_SUMMARY, which would precede it).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON) # libshmkv-dev depends on libshmkv0 (= version)

set(dist ${CMAKE_CURRENT_LIST_DIR})
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME shmkv)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION database)
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS adduser) # postinst; dpkg-shlibdeps adds the libraries
set(CPACK_DEBIAN_SERVER_PACKAGE_SUGGESTS redis-tools)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${dist}/deb/postinst ${dist}/deb/prerm ${dist}/deb/postrm ${dist}/deb/conffiles)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_COMPONENT_SERVER_DESCRIPTION
    "Redis-compatible data service with shared-memory reads
shmkvd keeps the five Redis data types durably in RocksDB and the hot
records in a shared-memory segment that local processes read through
libshmkv without a system call. It speaks RESP2 and RESP3, so Redis
clients work unchanged. This package runs it as a systemd service under
the system user shmkv, with its data in /var/lib/shmkv.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libshmkv0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "client library of shmkv
libshmkv reads from shmkvd's shared-memory cache with no system call
when the records are cached, and sends everything else to shmkvd over
its Unix socket.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libshmkv-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS libhiredis-dev) # shmkv.pc requires hiredis
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "client library of shmkv: development files
The header shmkv.h, the static library and shmkv.pc for pkg-config.")

include(CPack)
cpack_add_component(server)
cpack_add_component(lib)
cpack_add_component(dev DEPENDS lib)
