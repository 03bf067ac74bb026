# bash completion for ptxgate: commands, each command's options, and the values of options
# with a fixed set (targets, --emit, --format, --color, device profiles).
_ptxgate() {
  local cur prev words cword
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  local commands="emit check occupancy run devices cache tensormap help"
  local common="--format --color -Werror -v --verbose --help"
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  local command="${COMP_WORDS[1]}"
  case "$prev" in
    --target)
      COMPREPLY=($(compgen -W "sm_75 sm_80 sm_86 sm_87 sm_89 sm_90 sm_90a sm_100 sm_120" -- "$cur")); return ;;
    --emit)
      COMPREPLY=($(compgen -W "ptx llvm meta cubin sass resources" -- "$cur")); return ;;
    --format)
      COMPREPLY=($(compgen -W "text json sarif" -- "$cur")); return ;;
    --color)
      COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --stream)
      COMPREPLY=($(compgen -W "explicit null" -- "$cur")); return ;;
    --fp-contract)
      COMPREPLY=($(compgen -W "on off" -- "$cur")); return ;;
    --stream-policy)
      COMPREPLY=($(compgen -W "allow-legacy require-explicit" -- "$cur")); return ;;
    --device-profile|--profile)
      local names
      names="$(ptxgate devices --profiles 2>/dev/null | awk 'NR > 1 { print $1 }')"
      COMPREPLY=($(compgen -W "$names" -- "$cur") $(compgen -f -X '!*.json' -- "$cur")); return ;;
    -o|--output|--out|--cache-dir|--libdevice)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local options=""
  case "$command" in
    emit) options="--target --emit -O --opt-level --llvm-pipeline --instruction-budget --fp-contract --fast-math --checked --libdevice -o --output" ;;
    check) options="--kernel --signature --grid --block --shared-bytes --cooperative --device-profile --arg --empty-args --require-proof
                    --null-slot --elements --stream --stream-policy --fp-contract --fast-math" ;;
    occupancy) options="--kernel --device-profile --shared-bytes --fp-contract --fast-math" ;;
    run) options="--kernel --grid --block --shared-bytes --cooperative --arg --out --print --time --device
                  --fp-contract --fast-math --checked" ;;
    devices) options="--profiles --profile --json" ;;
    cache)
      if ((COMP_CWORD == 2)); then
        COMPREPLY=($(compgen -W "stats list clear" -- "$cur")); return
      fi
      options="--cache-dir --json" ;;
    tensormap) options="--type --dims --strides --box --element-strides --interleave --swizzle --l2-promotion
                        --oob-fill --im2col --lower-corner --upper-corner --channels --pixels --offset
                        --buffer-bytes --device-profile" ;;
    help)
      COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$options $common" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -X '!*.pg' -- "$cur") $(compgen -d -- "$cur"))
    if [[ "$command" == check || "$command" == occupancy ]]; then  # they also read other compilers' PTX and cubins
      COMPREPLY+=($(compgen -f -X '!*.ptx' -- "$cur") $(compgen -f -X '!*.cubin' -- "$cur"))
    fi
  fi
}
complete -o filenames -F _ptxgate ptxgate
