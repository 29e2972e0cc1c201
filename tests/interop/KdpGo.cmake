# SPDX-License-Identifier: GPL-2.0-or-later
# Go programs built offline against Debian's grpc-go (golang-google-grpc-dev).
#
# Debian ships grpc-go 1.33 and its dependencies as source under
# /usr/share/gocode, but not as a module graph that `go build` can resolve
# offline, so everything is built in GOPATH mode (STACK-NOTES §3):
#
#   GOPATH = <build>/interop-gopath : /usr/share/gocode
#
# The v1beta1 stubs are generated once into the first GOPATH entry, at the
# import path the proto's go_package names (kdp/interop/deviceplugin/v1beta1),
# and each program's sources are copied next to them under its own import path.
#
# Included by tests/interop and bench; sets KDP_GO_FOUND and defines
# kdp_go_program(). Without go, protoc or the Go generators, KDP_GO_FOUND is
# FALSE and callers skip their Go targets. Safe to include from several
# directories: the variables are set in each includer's scope, the protoc rule
# and its target exist once.

find_program(KDP_GO go)
find_program(KDP_PROTOC protoc)
find_program(KDP_PROTOC_GEN_GO protoc-gen-go)
find_program(KDP_PROTOC_GEN_GO_GRPC protoc-gen-go-grpc)
set(KDP_GO_SYSTEM_PATH /usr/share/gocode)

if(KDP_GO AND KDP_PROTOC AND KDP_PROTOC_GEN_GO AND KDP_PROTOC_GEN_GO_GRPC
   AND EXISTS ${KDP_GO_SYSTEM_PATH}/src/google.golang.org/grpc/server.go)
        set(KDP_GO_FOUND TRUE)
else()
        set(KDP_GO_FOUND FALSE)
        get_property(told GLOBAL PROPERTY KDP_GO_SKIP_TOLD)
        if(NOT told)
                message(STATUS "Go interop programs skipped: need go, protoc, protoc-gen-go, "
                               "protoc-gen-go-grpc and golang-google-grpc-dev")
                set_property(GLOBAL PROPERTY KDP_GO_SKIP_TOLD TRUE)
        endif()
        return()
endif()

set(KDP_GOPATH ${CMAKE_BINARY_DIR}/interop-gopath)
set(KDP_GO_PROTO_PKG kdp/interop/deviceplugin/v1beta1)
set(KDP_GO_PROTO_OUT
    ${KDP_GOPATH}/src/${KDP_GO_PROTO_PKG}/api.pb.go
    ${KDP_GOPATH}/src/${KDP_GO_PROTO_PKG}/api_grpc.pb.go)

# protoc places the files by go_package under --go_out, so the output lands in
# the GOPATH at the import path the programs use.
if(NOT TARGET kdp-go-proto)
        add_custom_command(
                OUTPUT ${KDP_GO_PROTO_OUT}
                COMMAND ${CMAKE_COMMAND} -E make_directory ${KDP_GOPATH}/src
                COMMAND ${KDP_PROTOC} -I${CMAKE_SOURCE_DIR}/proto
                        --plugin=protoc-gen-go=${KDP_PROTOC_GEN_GO}
                        --plugin=protoc-gen-go-grpc=${KDP_PROTOC_GEN_GO_GRPC}
                        --go_out=${KDP_GOPATH}/src --go-grpc_out=${KDP_GOPATH}/src
                        deviceplugin/v1beta1/api.proto
                DEPENDS ${CMAKE_SOURCE_DIR}/proto/deviceplugin/v1beta1/api.proto
                COMMENT "protoc-gen-go deviceplugin/v1beta1/api.proto"
                VERBATIM)
        add_custom_target(kdp-go-proto DEPENDS ${KDP_GO_PROTO_OUT})
endif()

# The environment of every go invocation: GOPATH mode, no network, a cache
# inside the build tree (HOME may be unset in CI), and no cgo, so the programs
# need no C toolchain and are static.
set(KDP_GO_ENV
    GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0
    GOPATH=${KDP_GOPATH}:${KDP_GO_SYSTEM_PATH}
    GOCACHE=${CMAKE_BINARY_DIR}/go-cache)

# kdp_go_program(TARGET t PACKAGE import/path SOURCE_DIR dir OUTPUT file)
# Copies dir/*.go to the GOPATH at import/path and builds OUTPUT. The target
# always runs; `go build` itself decides from its cache whether anything changed.
function(kdp_go_program)
        cmake_parse_arguments(ARG "" "TARGET;PACKAGE;SOURCE_DIR;OUTPUT" "" ${ARGN})
        file(GLOB sources CONFIGURE_DEPENDS ${ARG_SOURCE_DIR}/*.go)
        set(pkgdir ${KDP_GOPATH}/src/${ARG_PACKAGE})
        add_custom_target(${ARG_TARGET} ALL
                COMMAND ${CMAKE_COMMAND} -E make_directory ${pkgdir}
                COMMAND ${CMAKE_COMMAND} -E copy_if_different ${sources} ${pkgdir}
                COMMAND ${CMAKE_COMMAND} -E env ${KDP_GO_ENV}
                        ${KDP_GO} build -o ${ARG_OUTPUT} ${ARG_PACKAGE}
                BYPRODUCTS ${ARG_OUTPUT}
                COMMENT "go build ${ARG_PACKAGE}"
                VERBATIM)
        add_dependencies(${ARG_TARGET} kdp-go-proto)
endfunction()
