# SPDX-License-Identifier: GPL-2.0-or-later
# kdp_add_backend(NAME SOURCES a.c ...): builds kdp-backend-NAME.so into
# <build>/plugins, linked against libkdp, exporting only kdp_backend_entry.
function(kdp_add_backend name)
        cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
        set(target kdp-backend-${name})
        add_library(${target} MODULE ${ARG_SOURCES})
        set_target_properties(${target} PROPERTIES
                PREFIX ""
                OUTPUT_NAME kdp-backend-${name}
                LIBRARY_OUTPUT_DIRECTORY ${KDP_BUILD_BACKEND_DIR}
                C_VISIBILITY_PRESET hidden)
        target_link_libraries(${target} PRIVATE kdp ${ARG_LIBS})
        if(NOT KDP_SANITIZE)
                target_link_options(${target} PRIVATE -Wl,--no-undefined)
        endif()
        install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/kdp/backends)
endfunction()
