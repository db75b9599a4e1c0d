import { COMMA_LIST_VALUES, quote } from './bash.js';
import { argCommands, flagSets, shortPairs, spellings, valueGroups } from './groups.js';
import type { CompletionSpec } from './spec.js';

const words = (list: string[]) => ` ${list.join(' ')} `;

/**
 * The zsh script of `ccm completion zsh`: the same walk over the words as bash's (bash.ts), in zsh,
 * and zsh's own display: commands and flags with what they do (`_describe`), files by `_files`.
 * Sourced (`source <(ccm completion zsh)`, after compinit) it registers itself with compdef; put in a
 * folder of $fpath as `_ccm`, compinit finds it by its first line.
 */
export function zshScript(spec: CompletionSpec, version: string): string {
  const { bin } = spec;
  const ids = spec.commands.map((c) => c.words.join(' '));
  const summaries = [...spec.topics, ...spec.commands].flatMap((c) => [c.words.join(' '), c.summary]);
  const flagCase = (flags: CompletionSpec['rootFlags']) => {
    const sets = flagSets(flags);
    const described = flags.flatMap((f) => spellings(f).flatMap((s) => [s, f.description]));
    return `__ccm_v=${quote(words(sets.value))} __ccm_b=${quote(words(sets.bool))} __ccm_m=${quote(words(sets.multiple))} __ccm_p=${quote(words(shortPairs(flags)))}\n      __ccm_fdesc=(${described.map(quote).join(' ')}) ;;`;
  };
  const flagCases = [
    ...spec.commands.map((c) => `    (${quote(c.words.join(' '))}) ${flagCase(c.flags)}`),
    `    ('') ${flagCase(spec.rootFlags)}`,
    `    (*) __ccm_v=' ' __ccm_b=' ' __ccm_m=' ' __ccm_p=' ' __ccm_fdesc=() ;;`,
  ];
  const valueCases = valueGroups(spec).map(
    (g) =>
      `    (${g.keys.map(quote).join('|')})\n      __ccm_vals=(${g.items.map(quote).join(' ')})${g.list ? ' __ccm_sep=,' : ''} ;;`,
  );
  const argCases = argCommands(spec).map(({ id, args }) =>
    args === 'commands'
      ? `    (${quote(id)}) __ccm_path=$2; __ccm_next "$2" ;;`
      : `    (${quote(id)}) [[ -z $2 ]] && __ccm_reply=(${args.map(quote).join(' ')}) ;;`,
  );
  return `#compdef ${bin}
# zsh completion for ${bin} ${version}, printed by \`${bin} completion zsh\`.
#
# Load it into this shell (compinit first, as ~/.zshrc usually has it):
#   autoload -Uz compinit && compinit
#   source <(${bin} completion zsh)
# and into every new one: the second line (and the first, if missing) in ~/.zshrc. Or save it as _${bin}
# in a folder of $fpath before compinit runs.
#
# Every command, flag and value it completes is in this file: a TAB starts no program (no ${bin}, no
# Node), so completing never reaches a network, a cloud or an API server. Print it again after an
# upgrade of ${bin}.

__ccm_ids=(${ids.map(quote).join(' ')})
typeset -gA __ccm_summaries
__ccm_summaries=(${summaries.map(quote).join(' ')})

# __ccm_flags COMMAND: its flags that take a value (__ccm_v), that take none (__ccm_b), that may be
# given again (__ccm_m), its short flags with their long names (__ccm_p), what each does (__ccm_fdesc).
__ccm_flags() {
  case $1 in
${flagCases.join('\n')}
  esac
}

# __ccm_values COMMAND FLAG: the fixed set of the flag's values (__ccm_vals), __ccm_sep=, when it takes
# a comma list of them; false when the flag takes any value.
__ccm_values() {
  __ccm_sep=
  case "$1 $2" in
${valueCases.join('\n')}
    (*) return 1 ;;
  esac
}

# __ccm_args COMMAND ARGS: what the command's next argument can be, after these.
__ccm_args() {
  case $1 in
${argCases.join('\n')}
  esac
}

# __ccm_next WORDS: the words that can follow these on the way to a command (none: the top).
__ccm_next() {
  local id rest p=\${1:+$1 }
  for id in "\${__ccm_ids[@]}"; do
    [[ $id == "$p"?* ]] || continue
    rest=\${id#"$p"}
    rest=\${rest%% *}
    [[ " \${__ccm_reply[*]} " == *" $rest "* ]] || __ccm_reply+=("$rest")
  done
}

# __ccm_leads WORDS: whether these words are a command or lead to one; __ccm_is WORDS: a command.
__ccm_leads() {
  local id
  for id in "\${__ccm_ids[@]}"; do [[ $id == "$1" || $id == "$1 "* ]] && return 0; done
  return 1
}
__ccm_is() {
  local id
  for id in "\${__ccm_ids[@]}"; do [[ $id == "$1" ]] && return 0; done
  return 1
}

# __ccm_candidates WORD...: what the last word can be, after the words before it (${bin} first).
# Sets __ccm_reply (not yet matched against the word), __ccm_kind (words, flags or values),
# __ccm_path (the words the reply's words follow), __ccm_prefix (what of the word comes before the
# reply: --flag= or a list's first items) and __ccm_files (the flag takes a file or any value).
__ccm_candidates() {
  emulate -L zsh
  local n=$# i w cmd= path= expect= dashdash= value
  local cur=\${argv[n]}
  local -a args used
  __ccm_reply=() __ccm_prefix= __ccm_files= __ccm_kind=words __ccm_path=
  __ccm_flags ''
  for ((i = 2; i < n; i++)); do
    w=\${argv[i]}
    if [[ -n $expect ]]; then
      expect=
    elif [[ -z $dashdash && $w == -- ]]; then
      dashdash=1
    elif [[ -z $dashdash && $w == -?* ]]; then
      used+=("\${w%%=*}")
      [[ $w != *=* && $__ccm_v == *" $w "* ]] && expect=$w
    elif (( \${#args} == 0 )) && __ccm_leads "\${path:+$path }$w"; then
      path=\${path:+$path }$w
      if __ccm_is "$path"; then
        cmd=$path
        __ccm_flags "$cmd"
      fi
    else
      args+=("$w")
    fi
  done
  if [[ -n $expect ]]; then
    value=$cur
  elif [[ -z $dashdash && $cur == --*=* && $__ccm_v == *" \${cur%%=*} "* ]]; then
    expect=\${cur%%=*}
    value=\${cur#*=}
    __ccm_prefix=$expect=
  fi
  if [[ -n $expect ]]; then
    __ccm_kind=values
    if ! __ccm_values "$cmd" "$expect"; then
      __ccm_files=1
${COMMA_LIST_VALUES}
    else
      __ccm_reply=("\${__ccm_vals[@]}")
    fi
    return
  fi
  if [[ -z $dashdash && $cur != -* ]]; then
    # A topic's commands, or a command's arguments: words before flags.
    __ccm_path=$path
    (( \${#args} == 0 )) && __ccm_next "$path"
    [[ -n $cmd && \${#__ccm_reply} -eq 0 ]] && __ccm_args "$cmd" "\${args[*]}"
    [[ \${#__ccm_reply} -gt 0 || -z $cmd$path ]] && return
  fi
  [[ -z $dashdash && ( -n $cmd || -z $path ) ]] || return
  # The flags not given yet: each once (its short and long names, --x and --no-x are one flag).
  __ccm_kind=flags
  local f u skip
  for f in \${=__ccm_v} \${=__ccm_b}; do
    skip=
    if [[ $__ccm_m != *" $f "* ]]; then
      for u in "\${used[@]}"; do
        if [[ $u == "$f" || $u == "--no-\${f#--}" || $f == "--no-\${u#--}" || $__ccm_p == *" $u:$f "* || $__ccm_p == *" $f:$u "* ]]; then
          skip=1
          break
        fi
      done
    fi
    [[ -n $skip ]] || __ccm_reply+=("$f")
  done
}

# compsys runs this with its own options (_comp_options): no emulate here, which would turn off the
# extendedglob _describe matches with.
_ccm() {
  local __ccm_prefix __ccm_files __ccm_sep __ccm_kind __ccm_path __ccm_v __ccm_b __ccm_m __ccm_p c
  local -a __ccm_reply __ccm_vals described open closed
  local -A __ccm_fdesc
  __ccm_candidates "\${(@)words[1,CURRENT-1]}" "$IPREFIX$PREFIX"
  if [[ -n $__ccm_files ]]; then
    # zsh's own completion of file names (a kubeconfig, a cloud.conf, a folder).
    [[ -n $__ccm_prefix ]] && compset -P '*='
    _files
    return
  fi
  (( \${#__ccm_reply} )) || return 1
  case $__ccm_kind in
    (values)
      if [[ $__ccm_prefix == *, ]]; then
        compset -P '*,'
      elif [[ -n $__ccm_prefix ]]; then
        compset -P '*='
      fi
      # A template's text follows -o jsonpath= at once.
      open=(\${(M)__ccm_reply:#*=})
      closed=(\${__ccm_reply:#*=})
      (( \${#open} )) && compadd -S '' -a open
      (( \${#closed} )) && compadd -a closed
      ;;
    (flags)
      for c in "\${__ccm_reply[@]}"; do described+=("\${c//:/\\\\:}:\${__ccm_fdesc[$c]}"); done
      _describe -t flags 'flag' described
      ;;
    (*)
      for c in "\${__ccm_reply[@]}"; do
        described+=("\${c//:/\\\\:}\${__ccm_summaries[\${__ccm_path:+$__ccm_path }$c]:+:\${__ccm_summaries[\${__ccm_path:+$__ccm_path }$c]}}")
      done
      _describe -t commands "${bin} \${__ccm_path:-command}" described
      ;;
  esac
}

# Autoloaded from $fpath as _${bin}, this ran as _${bin}'s first call: complete now. Sourced: register with
# compinit's compdef.
if [[ $funcstack[1] == _ccm ]]; then
  _ccm "$@"
elif (( $+functions[compdef] )); then
  compdef _ccm ${bin}
else
  print -u2 "${bin} completion: zsh's completion system is not loaded; run 'autoload -Uz compinit && compinit' first"
  return 1
fi
`;
}
