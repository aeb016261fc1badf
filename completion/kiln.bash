# SPDX-License-Identifier: Apache-2.0
# bash completion for kiln.  Installed as
# /usr/share/bash-completion/completions/kiln (loaded on demand by
# bash-completion); for a build tree: . completion/kiln.bash
#
# Everything comes from kiln itself, so new commands and options need no
# edit here: `kiln help --complete commands`, `... options COMMAND` (one
# "OPTION<TAB>ARGUMENT" line each, from the usage text), `... values
# COMMAND OPTION [FILE...]` (formats for --to, a file's sample types for
# --sample-type, values written in the usage text); event names from
# `kiln list`, PIDs from /proc.

# The candidates for the word being typed, one per line, given the words
# before it: _kiln_candidates KILN WORD... CUR
_kiln_candidates()
{
    local kiln=$1; shift
    local -a w=("$@")
    local n=${#w[@]} cur=${w[-1]} cmd=${w[0]:-} i opt arg prev line values
    local -a files=()

    if [[ $n -le 1 || ($cmd == help && $n -eq 2) ]]; then
        compgen -W "$("$kiln" help --complete commands 2>/dev/null)" -- "$cur"
        return
    fi
    [[ $cmd == help ]] && return
    # After "--": the command to run, then its own arguments (files).
    for ((i = 1; i < n - 1; i++)); do
        if [[ ${w[i]} == -- ]]; then
            if ((i == n - 2)); then compgen -c -- "$cur"; else compgen -f -- "$cur"; fi
            return
        fi
        [[ ${w[i]} != -* && -f ${w[i]} ]] && files+=("${w[i]}")
    done
    local opts
    opts=$("$kiln" help --complete options "$cmd" 2>/dev/null) || return
    # The option whose argument is being typed: "--to pp", "--to=pp".
    prev=${w[n - 2]}
    opt= arg=
    if [[ $cur == --*=* ]]; then
        opt=${cur%%=*}; cur=${cur#*=}
    elif [[ $prev == -* ]]; then
        opt=$prev
    fi
    if [[ -n $opt ]]; then
        arg=$(awk -F '\t' -v o="$opt" '$1 == o { print $2; exit }' <<< "$opts")
    fi
    if [[ -z $arg ]]; then
        if [[ $cur == -* ]]; then
            compgen -W "$(cut -f1 <<< "$opts")" -- "$cur"
        else
            compgen -f -- "$cur"
        fi
        return
    fi
    # A list ("-e EV,...", "-p PID[,PID]"): complete its last element.
    local pre=
    if [[ $cur == *,* ]]; then pre=${cur%,*},; cur=${cur##*,}; fi
    values=$("$kiln" help --complete values "$cmd" "$opt" "${files[@]}" 2>/dev/null)
    if [[ -n $values ]]; then
        compgen -P "$pre" -W "$values" -- "$cur"
    elif [[ $arg == *PID* || $arg == *TID* ]]; then
        compgen -P "$pre" -W "$(cd /proc && compgen -G '[0-9]*')" -- "$cur"
    elif [[ $arg == EV* ]]; then
        compgen -P "$pre" -W "$("$kiln" list 2>/dev/null | awk '/^  [^ ]/ { print $1; if ($2 == "OR") print $3 }')" -- "$cur"
    elif [[ $arg == DIR* ]]; then
        compgen -d -- "$cur"
    elif [[ $arg == *FILE* || $arg == PREFIX* || $arg == BASE* || $arg == OUT* ]]; then
        compgen -f -- "$cur"
    fi
}

_kiln()
{
    local line=${COMP_LINE:0:COMP_POINT} cur rest
    local -a w
    # The words from the line itself: bash's COMP_WORDS splits at ':'
    # and '=' (sched:sched_switch, --to=pprof).
    read -ra w <<< "$line"
    [[ $line =~ [[:space:]]$ ]] && w+=("")
    cur=${w[-1]}
    local kiln=${w[0]}
    [[ $kiln == */* ]] || kiln=$(type -P "$kiln") || return
    mapfile -t COMPREPLY < <(_kiln_candidates "$kiln" "${w[@]:1}")
    # bash replaces only the part after the last ':' or '=' it split at.
    rest=${cur##*[:=]}
    if [[ $rest != "$cur" ]]; then
        local pfx=${cur%"$rest"} i
        [[ $COMP_WORDBREAKS == *"${pfx: -1}"* ]] &&
            for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#"$pfx"}; done
    fi
    [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *[:=,] ]] && compopt -o nospace 2>/dev/null
    return 0
}
complete -o filenames -o bashdefault -F _kiln kiln
