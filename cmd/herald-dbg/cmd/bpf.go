package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/heraldlb/herald/bpf"
)

func bpfCmd() *cobra.Command {
	root := &cobra.Command{Use: "bpf", Short: "The agent's eBPF state"}
	root.AddCommand(&cobra.Command{
		Use:   "responder",
		Short: "Entries of the responder maps (ARP for IPv4, neighbour discovery for IPv6) with their responses_sent counters, and whether it answers",
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := agentExec(cmd.Context(), "herald/responder")
			if err != nil {
				return fmt.Errorf("asking the agent at %s where its responder is: %w", socket, err)
			}
			var info bpf.ResponderInfo
			if err := json.Unmarshal(out, &info); err != nil {
				return err
			}
			if !info.Enabled {
				fmt.Println("L2 announcements are off on this agent: no responder is loaded.")
				return nil
			}
			p, err := bpf.ReadPinned(info.PinDir)
			if err != nil {
				return err
			}
			switch {
			case p.NeverRefreshed:
				fmt.Println("Heartbeat: never refreshed, the responder answers nothing yet.")
			case p.AnswersFor > 0:
				fmt.Printf("Heartbeat: answering for %.1fs more without a new heartbeat.\n", p.AnswersFor.Seconds())
			default:
				fmt.Printf("Heartbeat: expired %.1fs ago, the responder is silent (its deadline was not renewed).\n", -p.AnswersFor.Seconds())
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
			fmt.Fprintln(tw, "IP\tIFINDEX\tMAC\tANSWERS\tRESPONSES_SENT")
			for _, e := range p.Entries {
				answers := "ARP requests"
				if e.IP.Is6() {
					answers = "neighbor solicitations"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\n", e.IP, e.Ifindex, e.MAC, answers, e.ResponsesSent)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(p.Conflicts) > 0 {
				fmt.Println("\nOther hosts speaking for these addresses (not yet collected by the agent):")
				tw = tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
				fmt.Fprintln(tw, "IP\tIFINDEX\tOTHER_MAC\tPACKETS\tLAST")
				for _, c := range p.Conflicts {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.1fs ago\n", c.IP, c.Ifindex, c.MAC, c.Seen, c.Ago.Seconds())
				}
				return tw.Flush()
			}
			return nil
		},
	})
	return root
}
