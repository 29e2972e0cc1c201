# SPDX-License-Identifier: GPL-2.0-or-later
# The project's Go programs (the grpc-go kubelet stand-in, the Go baseline
# plugin of bench/), built in module mode against grpc-go and protobuf-go at
# the versions tests/interop/go.mod pins, checked against tests/interop/go.sum.
#
# Module "kdp" is assembled in the build tree, one directory per import path:
#
#   <build>/go-module/go.mod, go.sum          copied from tests/interop/
#   <build>/go-module/interop/deviceplugin/v1beta1/*.pb.go   protoc's output
#   <build>/go-module/<package>/*.go          each program's sources, copied
#
# protoc is Debian's (protobuf-compiler); its Go generators are the module's
# own `tool` entries, built from the same pinned go.sum. Modules come from the
# Go module proxy into a cache outside the build tree (KDP_GO_MODCACHE,
# default /var/cache/kdp/go-mod; a warm machine downloads nothing), and the
# go command never touches go.mod or go.sum (-mod=readonly) nor fetches a
# toolchain (GOTOOLCHAIN=local): a go older than go.mod's line is an error.
#
# To move a pin: edit tests/interop/go.mod, build once with
# KDP_GO_TIDY=1 in the environment (runs `go mod tidy` in the build tree),
# and copy go.mod and go.sum back from <build>/go-module.
#
# Included by tests/interop and bench; sets KDP_GO_FOUND and defines
# kdp_go_program(). Without go or protoc, KDP_GO_FOUND is FALSE and callers
# skip their Go targets. Safe to include from several directories.

find_program(KDP_GO go HINTS /usr/local/go/bin)
find_program(KDP_PROTOC protoc)

if(NOT (KDP_GO AND KDP_PROTOC))
        set(KDP_GO_FOUND FALSE)
        get_property(told GLOBAL PROPERTY KDP_GO_SKIP_TOLD)
        if(NOT told)
                message(STATUS "Go programs skipped: need go (>= the line of tests/interop/go.mod) and protoc")
                set_property(GLOBAL PROPERTY KDP_GO_SKIP_TOLD TRUE)
        endif()
        return()
endif()
set(KDP_GO_FOUND TRUE)

set(KDP_GO_MODULE ${CMAKE_BINARY_DIR}/go-module)
set(KDP_GO_SRC ${CMAKE_SOURCE_DIR}/tests/interop)
if(DEFINED ENV{KDP_GO_MODCACHE})
        set(KDP_GO_MODCACHE $ENV{KDP_GO_MODCACHE})
else()
        set(KDP_GO_MODCACHE /var/cache/kdp/go-mod)
endif()

# The environment of every go invocation: module mode on the pinned go.sum, the
# shared module cache, a build cache inside the build tree (HOME may be unset
# in CI), and no cgo, so the programs need no C toolchain and are static.
set(KDP_GO_ENV
    GO111MODULE=on GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0
    GOMODCACHE=${KDP_GO_MODCACHE}
    GOCACHE=${CMAKE_BINARY_DIR}/go-cache
    GOPATH=${CMAKE_BINARY_DIR}/go-path)

set(KDP_GO_PROTO_DIR ${KDP_GO_MODULE}/interop/deviceplugin/v1beta1)
set(KDP_GO_PROTO_OUT ${KDP_GO_PROTO_DIR}/api.pb.go ${KDP_GO_PROTO_DIR}/api_grpc.pb.go)

if(NOT TARGET kdp-go-proto)
        set(tidy)
        if("$ENV{KDP_GO_TIDY}" STREQUAL "1")
                set(tidy COMMAND ${CMAKE_COMMAND} -E env ${KDP_GO_ENV} GOFLAGS=-mod=mod
                        ${KDP_GO} mod tidy)
        endif()
        # go.mod and go.sum first: the generators are built from them.
        add_custom_command(
                OUTPUT ${KDP_GO_MODULE}/go.mod ${KDP_GO_MODULE}/go.sum
                COMMAND ${CMAKE_COMMAND} -E make_directory ${KDP_GO_MODULE}
                COMMAND ${CMAKE_COMMAND} -E copy ${KDP_GO_SRC}/go.mod ${KDP_GO_SRC}/go.sum ${KDP_GO_MODULE}
                DEPENDS ${KDP_GO_SRC}/go.mod ${KDP_GO_SRC}/go.sum
                COMMENT "go module kdp: go.mod, go.sum"
                VERBATIM)
        # protoc places the files by go_package (kdp/interop/...), so --go_out
        # is the directory above the module root's "interop".
        set(gen ${CMAKE_BINARY_DIR}/go-bin)
        add_custom_command(
                OUTPUT ${KDP_GO_PROTO_OUT}
                WORKING_DIRECTORY ${KDP_GO_MODULE}
                COMMAND ${CMAKE_COMMAND} -E env ${KDP_GO_ENV}
                        ${KDP_GO} build -o ${gen}/ google.golang.org/protobuf/cmd/protoc-gen-go
                        google.golang.org/grpc/cmd/protoc-gen-go-grpc
                COMMAND ${KDP_PROTOC} -I${CMAKE_SOURCE_DIR}/proto
                        --plugin=protoc-gen-go=${gen}/protoc-gen-go
                        --plugin=protoc-gen-go-grpc=${gen}/protoc-gen-go-grpc
                        --go_out=module=kdp:${KDP_GO_MODULE}
                        --go-grpc_out=module=kdp:${KDP_GO_MODULE}
                        deviceplugin/v1beta1/api.proto
                DEPENDS ${CMAKE_SOURCE_DIR}/proto/deviceplugin/v1beta1/api.proto
                        ${KDP_GO_MODULE}/go.mod ${KDP_GO_MODULE}/go.sum
                COMMENT "protoc-gen-go deviceplugin/v1beta1/api.proto"
                VERBATIM)
        add_custom_target(kdp-go-proto DEPENDS ${KDP_GO_PROTO_OUT})
        if(tidy)
                add_custom_target(kdp-go-tidy ${tidy} WORKING_DIRECTORY ${KDP_GO_MODULE} VERBATIM)
        endif()
endif()

# kdp_go_program(TARGET t PACKAGE dir SOURCE_DIR dir OUTPUT file)
# Copies SOURCE_DIR/*.go to <build>/go-module/PACKAGE (import path kdp/PACKAGE)
# and builds OUTPUT. The target always runs; `go build` itself decides from its
# cache whether anything changed.
function(kdp_go_program)
        cmake_parse_arguments(ARG "" "TARGET;PACKAGE;SOURCE_DIR;OUTPUT" "" ${ARGN})
        file(GLOB sources CONFIGURE_DEPENDS ${ARG_SOURCE_DIR}/*.go)
        set(pkgdir ${KDP_GO_MODULE}/${ARG_PACKAGE})
        add_custom_target(${ARG_TARGET} ALL
                COMMAND ${CMAKE_COMMAND} -E make_directory ${pkgdir}
                COMMAND ${CMAKE_COMMAND} -E copy_if_different ${sources} ${pkgdir}
                COMMAND ${CMAKE_COMMAND} -E env ${KDP_GO_ENV}
                        ${KDP_GO} build -o ${ARG_OUTPUT} ./${ARG_PACKAGE}
                WORKING_DIRECTORY ${KDP_GO_MODULE}
                BYPRODUCTS ${ARG_OUTPUT}
                COMMENT "go build kdp/${ARG_PACKAGE}"
                VERBATIM)
        add_dependencies(${ARG_TARGET} kdp-go-proto)
endfunction()
