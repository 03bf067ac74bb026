# CTest driver: install ptxgate into a temporary prefix, then configure, build and run examples/consumer against it.
# Variables: BUILD_DIR (ptxgate's build tree), SOURCE_DIR, WORK_DIR (scratch), GENERATOR, and the
# build's CMAKE_INSTALL_{BINDIR,LIBDIR,DATADIR,DOCDIR,MANDIR}.
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install into ${WORK_DIR}/prefix failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/consumer" -B "${WORK_DIR}/build" -G "${GENERATOR}"
                        "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer with find_package(ptxgate) failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed (${rc})")
endif()
# The rest of the install: the pkg-config file (a program built with its flags alone), the bash
# completion, the licence, and the man page when help2man was there.
# CMAKE_INSTALL_*DIR come from the build (-D), as GNUInstallDirs set them there.
set(prefix "${WORK_DIR}/prefix")
foreach(f ${CMAKE_INSTALL_DATADIR}/bash-completion/completions/ptxgate ${CMAKE_INSTALL_DOCDIR}/LICENSE
          ${CMAKE_INSTALL_LIBDIR}/pkgconfig/ptxgate.pc)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
if(EXISTS "${BUILD_DIR}/tools/ptxgate.1" AND NOT EXISTS "${prefix}/${CMAKE_INSTALL_MANDIR}/man1/ptxgate.1")
  message(FATAL_ERROR "the man page was built but not installed")
endif()
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${prefix}/${CMAKE_INSTALL_LIBDIR}/pkgconfig"
                          ${PKG_CONFIG} --cflags --libs ptxgate
                  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs ptxgate failed: ${err}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  file(WRITE "${WORK_DIR}/pc.cpp" "#include \"ptxgate/diagnostics/diagnostic.hpp\"\n"
             "int main() { return ptxgate::diag::all_codes().empty() ? 1 : 0; }\n")
  execute_process(COMMAND c++ "${WORK_DIR}/pc.cpp" -o "${WORK_DIR}/pc" ${flags} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building with pkg-config's flags failed: ${err}")
  endif()
  execute_process(COMMAND "${WORK_DIR}/pc" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the program built with pkg-config's flags failed (${rc})")
  endif()
endif()
# The installed CLI runs (its RPATH finds the installed library) and lists the profiles.
execute_process(COMMAND "${prefix}/${CMAKE_INSTALL_BINDIR}/ptxgate" devices --profiles RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "h100-sxm")
  message(FATAL_ERROR "the installed CLI does not list the installed profiles (${rc}): ${out}")
endif()

execute_process(COMMAND "${WORK_DIR}/build/ptxgate_consumer" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer failed (${rc})")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
