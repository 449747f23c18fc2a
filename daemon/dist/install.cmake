# Runs at install time (install(SCRIPT), component "server"): puts
# shmkvd.conf and the systemd unit where the install prefix, known only
# now, says. daemon/dist/CMakeLists.txt sets shmkv_dist_src and the
# GNUInstallDirs folders it needs before this runs.
#
# GNUInstallDirs' rule, applied to the prefix given now rather than the one
# configured: under the prefix /usr the configuration is /etc, not
# /usr/etc. Debian 12 keeps packaged units in /lib/systemd/system.
string(REGEX REPLACE "/+$" "" prefix "${CMAKE_INSTALL_PREFIX}")
if(IS_ABSOLUTE "${shmkv_bindir}")
  set(bindir "${shmkv_bindir}")
else()
  set(bindir "${prefix}/${shmkv_bindir}")
endif()
if(IS_ABSOLUTE "${shmkv_sysconfdir}")
  set(confdir "${shmkv_sysconfdir}/shmkv")
elseif(prefix STREQUAL "" OR prefix STREQUAL "/usr")
  set(confdir "/${shmkv_sysconfdir}/shmkv")
else()
  set(confdir "${prefix}/${shmkv_sysconfdir}/shmkv")
endif()
if(IS_ABSOLUTE "${shmkv_unitdir}")
  set(unitdir "${shmkv_unitdir}")
elseif(NOT shmkv_unitdir STREQUAL "")
  set(unitdir "${prefix}/${shmkv_unitdir}")
elseif(prefix STREQUAL "" OR prefix STREQUAL "/usr")
  set(unitdir "/lib/systemd/system")
else()
  set(unitdir "${prefix}/lib/systemd/system")
endif()

# The unit names the binary and the configuration by their full paths.
set(SHMKV_BINDIR "${bindir}")
set(SHMKV_CONFDIR "${confdir}")
# It is written beside its destination, not in the build tree, which the
# installing user may not own, and put in place by file(INSTALL), which
# logs it, lists it in install_manifest.txt and sets its mode.
file(READ "${shmkv_dist_src}/shmkvd.service.in" unit)
string(CONFIGURE "${unit}" unit @ONLY)
set(draft "$ENV{DESTDIR}${unitdir}/.shmkvd.service.draft")
file(WRITE "${draft}" "${unit}")
file(INSTALL "${draft}" DESTINATION "${unitdir}" RENAME shmkvd.service
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(REMOVE "${draft}")
file(INSTALL "${shmkv_dist_src}/shmkvd.conf" DESTINATION "${confdir}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
