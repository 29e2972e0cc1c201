# SPDX-License-Identifier: GPL-2.0-or-later
# Warnings and sanitizers for everything kdp compiles (docs/style.md §10).
set(KDP_C_WARNINGS -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes
    -Wmissing-prototypes -Werror=implicit-function-declaration -Werror=return-type
    -Wno-unused-parameter)
add_compile_options(${KDP_C_WARNINGS})
add_compile_definitions(_GNU_SOURCE)

if(KDP_SANITIZE)
        add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                            -fno-sanitize-recover=undefined)
        add_link_options(-fsanitize=address,undefined)
endif()
if(KDP_FUZZ)
        # coverage for libFuzzer in every object; tests/fuzz links its targets with -fsanitize=fuzzer
        if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
                message(FATAL_ERROR "KDP_FUZZ needs clang (CC=clang), not ${CMAKE_C_COMPILER_ID}")
        endif()
        add_compile_options(-fsanitize=fuzzer-no-link)
endif()
