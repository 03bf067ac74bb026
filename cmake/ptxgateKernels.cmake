# ptxgate_add_kernels: compile .pg files with the ptxgate CLI at build time.
#
#   ptxgate_add_kernels(<name> SOURCES a.pg [b.pg ...]
#                       [TARGET_ARCH sm_90] [EMIT ptx|cubin] [OUTPUT_DIR dir]
#                       [EMBED] [INSTALL_DESTINATION dir])
#
# Each SOURCE becomes <OUTPUT_DIR>/<stem>.<ptx|cubin> (OUTPUT_DIR defaults to
# ${CMAKE_CURRENT_BINARY_DIR}/<name>), rebuilt when the .pg file or the CLI changes. <name> is an
# INTERFACE library: link it to build the files first. With EMBED, each file is also a header
# <stem>_<ptx|cubin>.hpp in <OUTPUT_DIR>/include (on <name>'s include path) defining
#   inline constexpr unsigned char <stem>_<ptx|cubin>[] = {...};   (a PTX text ends with a 0 byte)
#   inline constexpr std::size_t <stem>_<ptx|cubin>_size = ...;      (without that 0 byte)
# INSTALL_DESTINATION installs the compiled files there. The CLI is the imported target
# ptxgate::cli (or PTXGATE_CLI, a path, when set).
function(ptxgate_add_kernels name)
  cmake_parse_arguments(PGK "EMBED" "TARGET_ARCH;EMIT;OUTPUT_DIR;INSTALL_DESTINATION" "SOURCES" ${ARGN})
  if(NOT PGK_SOURCES)
    message(FATAL_ERROR "ptxgate_add_kernels(${name}): no SOURCES")
  endif()
  if(NOT PGK_TARGET_ARCH)
    set(PGK_TARGET_ARCH sm_90)
  endif()
  if(NOT PGK_EMIT)
    set(PGK_EMIT ptx)
  endif()
  if(NOT PGK_EMIT MATCHES "^(ptx|cubin)$")
    message(FATAL_ERROR "ptxgate_add_kernels(${name}): EMIT must be ptx or cubin, not '${PGK_EMIT}'")
  endif()
  if(NOT PGK_OUTPUT_DIR)
    set(PGK_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  endif()
  if(PTXGATE_CLI)
    set(cli "${PTXGATE_CLI}")
  else()
    set(cli "$<TARGET_FILE:ptxgate::cli>")
  endif()
  set(outputs "")
  foreach(source IN LISTS PGK_SOURCES)
    get_filename_component(source "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(stem "${source}" NAME_WE)
    set(out "${PGK_OUTPUT_DIR}/${stem}.${PGK_EMIT}")
    add_custom_command(OUTPUT "${out}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${PGK_OUTPUT_DIR}"
      COMMAND "${cli}" emit "${source}" --target ${PGK_TARGET_ARCH} --emit ${PGK_EMIT} -o "${out}"
      DEPENDS "${source}" ${cli}
      COMMENT "ptxgate: ${stem}.pg -> ${stem}.${PGK_EMIT} (${PGK_TARGET_ARCH})"
      VERBATIM)
    list(APPEND outputs "${out}")
    if(PGK_EMBED)
      string(MAKE_C_IDENTIFIER "${stem}_${PGK_EMIT}" symbol)
      set(header "${PGK_OUTPUT_DIR}/include/${symbol}.hpp")
      add_custom_command(OUTPUT "${header}"
        COMMAND ${CMAKE_COMMAND} -DINPUT=${out} -DOUTPUT=${header} -DSYMBOL=${symbol}
                -DTEXT=$<STREQUAL:${PGK_EMIT},ptx> -P "${_PTXGATE_KERNELS_DIR}/ptxgateEmbed.cmake"
        DEPENDS "${out}" "${_PTXGATE_KERNELS_DIR}/ptxgateEmbed.cmake"
        COMMENT "ptxgate: embedding ${stem}.${PGK_EMIT} as ${symbol}"
        VERBATIM)
      list(APPEND outputs "${header}")
    endif()
  endforeach()
  add_custom_target(${name}_compile DEPENDS ${outputs})
  add_library(${name} INTERFACE)
  add_dependencies(${name} ${name}_compile)
  if(PGK_EMBED)
    target_include_directories(${name} INTERFACE "${PGK_OUTPUT_DIR}/include")
  endif()
  if(PGK_INSTALL_DESTINATION)
    list(FILTER outputs EXCLUDE REGEX "\\.hpp$")
    install(FILES ${outputs} DESTINATION "${PGK_INSTALL_DESTINATION}")
  endif()
endfunction()

set(_PTXGATE_KERNELS_DIR "${CMAKE_CURRENT_LIST_DIR}")
